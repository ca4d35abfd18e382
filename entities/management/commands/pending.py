"""``python manage.py pending <book> list|confirm|confirm-as|merge|reject`` — the curator's queue from the
command line: the same services (``entities.services.pending``, ``entities.discovery.services``) and so
the same rules and journal as the REST routes and the admin's 待确认队列."""

from core.commands import BookCommand
from entities import selectors
from entities.discovery.services import HIGH, LOW, discovery_merge
from entities.models import PendingItem
from entities.services.pending import pending_items_bulk
from kernel.exceptions import InvalidInput

BANDS = ("高", "中", "低")
# The bands of extraction and discovery alike (> HIGH 高, LOW–HIGH 中, < LOW 低): discovery's own thresholds.


def band_of(confidence: float | None) -> str:
    if confidence is None:
        return "低"
    return "高" if confidence > HIGH else "中" if confidence >= LOW else "低"


def _row(item: dict) -> str:
    payload = item["payload"] or {}
    name = payload.get("name") or payload.get("mention") or payload.get("entity_id") or ""
    aliases = "、".join(
        a["alias"] + ("（泛称）" if a.get("generic") else "")
        for a in payload.get("aliases", [])[:8]
        if isinstance(a, dict) and "alias" in a
    )
    confidence = item["confidence"]
    head = f"#{item['pk']}\t{item['kind']}\t{name}\t置信度 {confidence}（{band_of(confidence)}）"
    return head + (f"\t第{item['chapter']}章" if item["chapter"] else "") + (f"\t别名 {aliases}" if aliases else "")


class Command(BookCommand):
    help = (
        "待确认队列：list 列出；confirm 按建议确认；confirm-as 确认为已有实体；merge 合并发现的实体；reject 拒绝。"
        "可按编号（多个）或按置信度档（--band 高/中/低）一次处理多项；规则与日志同 REST 与后台。"
    )
    book_help = "书籍 slug（或书籍文件夹）"

    def add_command_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", metavar="<action>", required=True)
        listing = sub.add_parser("list", help="列出待确认项（置信度最低的在前）")
        self._filters(listing)
        listing.add_argument("--status", default="pending", help="状态（默认 pending；all 为全部）")
        confirm = sub.add_parser("confirm", help="按建议确认（发现的实体写入 设定/名册.yaml）")
        self._targets(confirm)
        confirm_as = sub.add_parser("confirm-as", help="确认为指定的已有实体（其名字成为该实体的别名）")
        confirm_as.add_argument("entity", help="已有实体的 id 或名字")
        self._targets(confirm_as)
        merge = sub.add_parser("merge", help="把几个发现的实体合并为一个（并入出现次数最多的那个）")
        merge.add_argument("pks", nargs="+", type=int, help="待确认项编号（至少两个）")
        reject = sub.add_parser("reject", help="拒绝（发现的实体记入 设定/.discovery-rejected.yaml）")
        self._targets(reject)
        for p in (listing, confirm, confirm_as, merge, reject):
            self.add_output_arguments(p)

    def add_arguments(self, parser):
        # --json goes on each action's parser (after its own arguments), not before the action.
        parser.add_argument(self.book_argument, help=self.book_help)
        self.add_command_arguments(parser)

    def _filters(self, parser):
        parser.add_argument("--band", choices=BANDS, help="只处理这一置信度档")
        parser.add_argument("--kind", choices=PendingItem.Kind.values, help="只处理这一类（如 entity_discovered）")

    def _targets(self, parser):
        parser.add_argument("pks", nargs="*", type=int, help="待确认项编号（可多个）；不填则用 --band / --kind 选")
        self._filters(parser)

    def handle(self, *args, **options):
        book = self.book_get(options)
        action = options["action"]
        if action == "list":
            status = None if options["status"] == "all" else options["status"]
            rows = self._select(selectors.pending_list(book=book, status=status), options)
            self.emit(rows, "\n".join(_row(r) for r in rows) or "（没有待确认项）", options)
            return
        if action == "merge":
            items = [selectors.pending_get(book=book, pk=pk) for pk in options["pks"]]
            result = discovery_merge(items=items)
            text = f"已合并为 #{result['pk']}「{result['name']}」：并入 {'、'.join(f'#{p}' for p in result['merged'])}"
            self.emit(result, text, options)
            return
        items = self._items(book, options)
        entity = selectors.entity_get(book=book, ref=options["entity"]) if action == "confirm-as" else None
        result = pending_items_bulk(items=items, action="reject" if action == "reject" else "confirm", entity=entity)
        verb = {"confirm": "确认", "confirm-as": f"确认为 {options.get('entity')}", "reject": "拒绝"}[action]
        lines = [f"{verb}：成功 {result['done']} 项，失败 {result['failed']} 项", *result["errors"]]
        self.emit(result, "\n".join(lines), options)

    def _select(self, rows: list[dict], options) -> list[dict]:
        if options.get("band"):
            rows = [r for r in rows if band_of(r["confidence"]) == options["band"]]
        if options.get("kind"):
            rows = [r for r in rows if r["kind"] == options["kind"]]
        return rows

    def _items(self, book, options) -> list[PendingItem]:
        """The items an action works on: the pks given (each must exist), else every pending item of the
        band / kind chosen; one of the two is required (no action on the whole queue by accident)."""
        if options["pks"]:
            items = [selectors.pending_get(book=book, pk=pk) for pk in options["pks"]]
            if options.get("band") or options.get("kind"):
                keep = {r["pk"] for r in self._select([selectors.pending_to_dict(i) for i in items], options)}
                items = [i for i in items if i.pk in keep]
            return items
        if not (options.get("band") or options.get("kind")):
            raise InvalidInput("请给出待确认项编号，或用 --band / --kind 选择要处理的项", extra={"field": "pks"})
        rows = self._select(selectors.pending_list(book=book, status="pending"), options)
        return [selectors.pending_get(book=book, pk=r["pk"]) for r in rows]
