"""``python manage.py apikey create|list|revoke`` — manage API keys (the raw key is shown once)."""

from core.commands import BookCommand
from core.models import ApiKey
from core.services import apikey_create, apikey_revoke


def apikey_row(key: ApiKey) -> dict:
    """The public description of a key (never its hash)."""
    return {
        "prefix": key.prefix,
        "name": key.name,
        "scope": key.scope,
        "book": key.book.slug if key.book_id else None,
        "revoked": key.revoked,
        "created_at": key.created_at.isoformat(timespec="seconds"),
        "last_used_at": key.last_used_at.isoformat(timespec="seconds") if key.last_used_at else None,
    }


class Command(BookCommand):
    help = "管理 API 密钥：create 新建（原始密钥只显示一次）、list 列出、revoke 吊销。"
    book_argument = None  # a key may be for every book: the book is create's --book
    json_help = "以 JSON 输出"

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", metavar="<action>", required=True)
        create = sub.add_parser("create", help="新建密钥并打印原始密钥（只显示这一次）")
        create.add_argument("--name", required=True, help="密钥名称（便于辨认用途）")
        create.add_argument("--scope", choices=ApiKey.Scope.values, default="read", help="read 只读 / write 读写")
        create.add_argument("--book", help="只允许访问这本书（书籍 slug）；留空表示所有书")
        self.add_output_arguments(create)
        listing = sub.add_parser("list", help="列出密钥（不含原始密钥）")
        listing.add_argument("--all", action="store_true", help="包括已吊销的密钥")
        self.add_output_arguments(listing)
        revoke = sub.add_parser("revoke", help="按前缀吊销密钥")
        revoke.add_argument("prefix", help="密钥前缀（list 显示的 prefix，如 wn_AbCd123）")
        self.add_output_arguments(revoke)

    def handle(self, *args, **options):
        result, text = getattr(self, "_" + options["action"])(options)
        self.emit(result, text, options)

    def _create(self, options):
        book = self.book_get(options, "book") if options["book"] else None
        key, raw = apikey_create(name=options["name"], scope=options["scope"], book=book)
        result = {**apikey_row(key), "key": raw}
        where = f"《{book.title or book.slug}》（{book.slug}）" if book else "所有书"
        text = f"已创建密钥 {key.name}（{key.scope}，{where}）。请立即保存，它不会再显示：\n{raw}"
        return result, text

    def _list(self, options):
        keys = ApiKey.objects.select_related("book").order_by("created_at", "id")
        if not options["all"]:
            keys = keys.filter(revoked=False)
        rows = [apikey_row(k) for k in keys]
        lines = [
            "\t".join([r["prefix"], r["name"], r["scope"], r["book"] or "*", "已吊销" if r["revoked"] else "有效"])
            for r in rows
        ]
        return rows, "\n".join(lines) if lines else "（没有密钥）"

    def _revoke(self, options):
        count = apikey_revoke(prefix=options["prefix"])
        return {"prefix": options["prefix"], "revoked": count}, f"已吊销 {count} 个以 {options['prefix']} 开头的密钥"
