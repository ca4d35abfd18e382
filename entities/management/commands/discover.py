"""``python manage.py discover <book>`` — propose the cast of a book from its text (no model calls)."""

from core.commands import BookCommand
from entities.discovery.engine import TYPES
from entities.discovery.services import book_discover


class Command(BookCommand):
    help = (
        "从正文发现角色（以及地点、势力）：提议正名、别名分组、置信度与证据，放入待确认队列（发现的实体）。"
        "已有、已提议或已拒绝的名字不再提出。规则见 docs/discovery.md。"
    )

    book_help = "书籍 slug（先 rebuild 书籍文件夹）"
    json_help = "以 JSON 输出报告"

    def add_command_arguments(self, parser):
        parser.add_argument("--min-count", type=int, default=5, help="一个名字至少出现的次数（默认 5）")
        parser.add_argument(
            "--types", default=",".join(TYPES), help=f"要发现的类型，逗号分隔（默认 {','.join(TYPES)}）"
        )
        parser.add_argument("--limit", type=int, default=200, help="每种类型最多提议多少个（默认 200）")

    def handle(self, *args, **options):
        types = [t.strip() for t in options["types"].replace("，", ",").split(",") if t.strip()]
        report = book_discover(
            book=self.book_get(options), min_count=options["min_count"], types=types, limit=options["limit"]
        )
        if options["json"]:
            self.emit(report, None, options)
            return
        c = report["counts"]
        lines = [
            f"《{report['book']}》{report['chapters']} 章：提议 {c['proposed']} 个，入队 {c['queued']} 个"
            f"（已知 {c['known']}，置信度过低 {c['below_floor']}）"
        ]
        bounds = report["bounds"]
        if bounds.get("note"):
            lines.append(f"  注意：{bounds['note']}")
        if bounds["unlexical"]:
            lines.append(f"  注意：{bounds['unlexical']} 个片段几乎不成词（疑似乱码），只按词典切分，未从中找新名字")
        for item in report["queued"][:50]:
            aliases = "、".join(a["alias"] + ("（泛称）" if a["generic"] else "") for a in item["aliases"][:8])
            ev = item["evidence"]
            lines.append(
                f"  #{item['pk']} {item['type']} {item['name']} 置信度 {item['confidence']}（{item['band']}）"
                f" {ev['count']} 次，始于第{ev['first_chapter']}章" + (f"；别名 {aliases}" if aliases else "")
            )
        if len(report["queued"]) > 50:
            lines.append(f"  …… 其余 {len(report['queued']) - 50} 个见后台「待确认队列」")
        self.stdout.write("\n".join(lines))
