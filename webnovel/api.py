"""The one NinjaAPI of the project. Each app contributes a Router; domain errors become
``{"message", "extra"}`` JSON with their status, and validation errors a 422 in the same shape."""

import functools
import inspect
import json
import math
import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DataError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja import NinjaAPI, Router, Schema, Status, Swagger
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.docs import _csrf_needed
from ninja.parser import Parser
from ninja.renderers import JSONRenderer

from continuity.api import router as continuity_router
from core.api import router as core_router
from core.auth import API_AUTH, api_auth, rate_check
from core.lazybuild import book_get_or_build
from core.schemas import documented
from core.selectors import book_get
from entities.api import router as entities_router
from kernel.exceptions import (
    DATABASE_BUSY_MESSAGE,
    DATABASE_BUSY_RETRY_AFTER,
    DomainError,
    NotFound,
    RateLimited,
    database_busy,
)
from kernel.interfaces import Arg, Interface, interfaces_load
from kernel.journal_ops import JournalOp, journal_ops_load
from kernel.jsonsafe import JsonRefused, json_loads_strict
from kernel.responses import response_type, response_union
from memory.api import router as memory_router
from storysystem.api import router as storysystem_router
from threads.api import router as threads_router


def _json_finite(value: Any) -> Any:
    """``value`` (plain JSON types) with NaN / ±Infinity as null, as pydantic's JSON mode writes them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_finite(v) for v in value]
    return value


class UnicodeJSONRenderer(JSONRenderer):
    """JSON as UTF-8 text: Chinese stays readable (and half the bytes of \\u escapes).

    Every answer is valid JSON, errors included: a NaN / Infinity that reached a value (a ``.nan`` in a
    book file, a float query parameter echoed in an error's ``extra``) is written as null, never as
    the bare ``NaN`` Python's json writes; a lone surrogate is written as its ``\\u`` escape instead
    of failing to encode."""

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> bytes:
        dumps = functools.partial(json.dumps, cls=self.encoder_class, allow_nan=False)
        try:
            text = dumps(data, ensure_ascii=False)
        except ValueError:
            data = _json_finite(json.loads(json.dumps(data, cls=self.encoder_class)))
            text = dumps(data, ensure_ascii=False)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return dumps(data, ensure_ascii=True).encode("ascii")


class StrictParser(Parser):
    """Request bodies through ``kernel.jsonsafe``: bounded depth, no NaN / Infinity, 64-bit integers,
    no lone surrogates or NUL; and always a JSON object (every body of this API is one — ninja would
    read ``[null, null]`` as an object of defaults). Runs after authentication, inside the operation."""

    def parse_body(self, request: HttpRequest) -> dict:
        value = json_loads_strict(request.body)
        if not isinstance(value, dict):
            kind = _JSON_KINDS.get(type(value), "数字")
            raise JsonRefused(f"请求体必须是 JSON 对象（收到{kind}）", extra={"field": "body"})
        return value


class ErrorOut(Schema):
    """The body of every error answer: a message for the author and machine-readable details."""

    message: str
    extra: Any


# Every operation can answer these through the handlers below (auth runs on every endpoint, every
# path starts with a book that may not exist, every parameter is validated); 400 and 413 only
# concern a request body.
ERROR_RESPONSES = {
    "400": "请求体不是合法的 JSON / UTF-8",
    "401": "需要认证：缺少或无效的 API 密钥",
    "403": "无权执行：只读密钥写入、密钥不属于这本书，或登录账号缺少权限",
    "404": "书籍或所指对象不存在",
    "409": "名称有歧义，或与现有状态冲突",
    "413": "请求体过大",
    "422": "参数或请求体无效",
    "414": "URL 过长：gunicorn 拒绝超过 4094 字节的请求行（它的 HTML 页面，不经过本 API）",
    "503": "数据库正忙（另一个写操作持有锁）：稍后重试，见 Retry-After",
}
BODY_ONLY = {"400", "413"}
NOT_JSON = {"414"}


class BookAPI(NinjaAPI):
    """NinjaAPI whose OpenAPI schema also documents the error answers (``ErrorOut``) of every
    operation, so that a client (or schemathesis) knows a 404 / 422 is part of the contract."""

    def get_openapi_schema(self, **kwargs: Any) -> dict:
        schema = super().get_openapi_schema(**kwargs)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components["ErrorOut"] = ErrorOut.model_json_schema()
        ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
        for operations in schema["paths"].values():
            for operation in operations.values():
                # ninja keys responses by int, openapi_extra by str: one key per status (extra wins).
                responses = operation["responses"] = {str(k): v for k, v in operation.get("responses", {}).items()}
                for status, text in ERROR_RESPONSES.items():
                    if status in BODY_ONLY and "requestBody" not in operation:
                        continue
                    responses.setdefault(status, {"description": text, **({} if status in NOT_JSON else ref)})
        return schema


class LocalSwagger(Swagger):
    """The Swagger page from ninja's own template and static files (settings.py finds them in its folder),
    never its CDN fallback: ninja is deliberately not an installed app, which is what ninja tests for."""

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        self.settings["url"] = self.get_openapi_url(api, kwargs)
        context = {"swagger_settings": json.dumps(self.settings, indent=1), "api": api, "add_csrf": _csrf_needed(api)}
        return render(request, self.template, context)


api = BookAPI(
    renderer=UnicodeJSONRenderer(),
    docs=LocalSwagger(),
    title="webnovel API",
    version="1.0",
    description="长篇网文的连续性数据库与上下文引擎。所有接口位于 /api/books/{book}/… 之下。",
    urls_namespace="api",
    auth=API_AUTH,
    parser=StrictParser(),
)


_JSON_KINDS = {list: "数组", str: "字符串", bool: "布尔值", type(None): "null", int: "数字", float: "数字"}


def _repeated_query_refuse(run: Callable[..., Any]) -> Callable[..., Any]:
    # A query parameter given twice: no endpoint takes a list there, and Django keeps the last value.
    # An "operation" decorator: it runs after authentication (an anonymous caller gets its 401 first).
    @functools.wraps(run)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        repeated = sorted(name for name, values in request.GET.lists() if len(values) > 1)
        if repeated:
            message = f"参数重复：{'、'.join(repeated)}（每个查询参数只能给一次）"
            return api.create_response(request, {"message": message, "extra": {"parameters": repeated}}, status=422)
        return run(request, *args, **kwargs)

    return wrapper


api.add_decorator(_repeated_query_refuse, mode="operation")


@api.exception_handler(DomainError)
def _domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    response = api.create_response(request, exc.as_dict(), status=exc.status_code)
    if isinstance(exc, RateLimited):
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    fields = []
    for err in exc.errors:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        fields.append({"field": loc, "error": err.get("msg", "")})
    names = "、".join(f["field"] for f in fields) or "请求"
    return api.create_response(request, {"message": f"参数无效：{names}", "extra": {"errors": fields}}, status=422)


@api.exception_handler(AuthenticationError)
def _auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return api.create_response(request, {"message": "需要认证：请提供 X-API-Key 或登录后台", "extra": {}}, status=401)


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return api.create_response(
        request,
        {"message": f"请求体过大：上限 {limit} 字节（{limit // (1024 * 1024)} MB）", "extra": {"limit_bytes": limit}},
        status=413,
    )


@api.exception_handler(OverflowError)
@api.exception_handler(DataError)
def _out_of_range(request: HttpRequest, exc: Exception) -> HttpResponse:
    # A number past the database's 64-bit integers (a chapter 10**30) fails inside the driver:
    # SQLite raises OverflowError, PostgreSQL a DataError. Both are bad input, not a server fault.
    return api.create_response(
        request, {"message": "参数数值超出范围（整数最大 9223372036854775807）", "extra": {}}, status=422
    )


@api.exception_handler(OperationalError)
def _database_busy(request: HttpRequest, exc: OperationalError) -> HttpResponse:
    # A write that waited its whole busy / lock timeout behind another writer (a long rebuild):
    # the request was fine and nothing was written; the client should retry, not report a bug.
    if not database_busy(exc):
        raise exc
    response = api.create_response(
        request, {"message": DATABASE_BUSY_MESSAGE, "extra": {"retry_after": DATABASE_BUSY_RETRY_AFTER}}, status=503
    )
    response["Retry-After"] = str(DATABASE_BUSY_RETRY_AFTER)
    return response


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    cause = exc.__cause__
    if isinstance(cause, DomainError):  # raised by StrictParser while ninja read the body
        return api.create_response(request, cause.as_dict(), status=cause.status_code)
    return api.create_response(request, {"message": str(exc), "extra": {}}, status=exc.status_code)


# ── the read operations, generated from the registry (kernel/interfaces.py) ──────────────────────────

_PATH_PARAM = re.compile(r"{(\w+)}")
_READ_ROUTERS = {
    "webnovel": core_router,
    "threads": threads_router,
    "entities": entities_router,
    "storysystem": storysystem_router,
    "memory": memory_router,
    "continuity": continuity_router,
}


def _response(spec: Interface) -> Any:
    return str if spec.text else response_union(spec.response)


def _annotation(arg: Arg, *, in_path: bool) -> Any:
    nullable = not (arg.required or in_path) and arg.default is None
    limits = arg.limits()
    if arg.type is bool or not limits:
        return arg.type | None if nullable else arg.type
    return documented(arg.type, nullable=nullable, **limits)


def _openapi_extra(spec: Interface) -> dict | None:
    responses: dict[str, Any] = {}
    media = {rendering.media for _, rendering in spec.formats if rendering.media}
    if media:
        content = {"application/json": {"schema": {"$ref": f"#/components/schemas/{_response(spec).__name__}"}}}
        content.update({m: {"schema": {"type": "string"}} for m in sorted(media)})
        responses["200"] = {"description": "OK", "content": content}
    if spec.rate:
        responses["429"] = {"description": f"{spec.rate[1]}过于频繁（每个密钥 / 账号的次数上限，见 Retry-After）"}
    return {"responses": responses} if responses else None


def _read_view(spec: Interface) -> Callable[..., Any]:
    """The GET operation of one read: the declared args as path / query parameters, the selector's answer."""
    in_path = set(_PATH_PARAM.findall(spec.path))
    params = [
        inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=HttpRequest),
        inspect.Parameter("book", inspect.Parameter.KEYWORD_ONLY, annotation=str),
    ]
    for arg in spec.all_args():
        required = arg.required or arg.name in in_path
        default = inspect.Parameter.empty if required else arg.default
        annotation = _annotation(arg, in_path=arg.name in in_path)
        params.append(
            inspect.Parameter(arg.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )

    def view(request: HttpRequest, *, book: str, **args: Any) -> Any:
        if spec.rate:
            rate_check(request, setting=spec.rate[0], what=spec.rate[1])
        answer = spec.call(book=book_get_or_build(slug=book), args=args)
        chosen = args.get("format", "json")
        if chosen != "json" and spec.rendering(chosen).media:
            return HttpResponse(answer, content_type=f"{spec.rendering(chosen).media}; charset=utf-8")
        return answer

    view.__signature__ = inspect.Signature(params)  # what ninja reads the parameters from
    view.__name__ = spec.name.replace("-", "_")
    view.__doc__ = spec.fn.__doc__
    return view


def _specificity(path: str) -> tuple:
    # Django tries patterns in order: "/entities/core" must come before "/entities/{ref}" (and a write's
    # literal path before a read's parameter at the same place), or the parameter swallows it.
    return tuple((1, "") if _PATH_PARAM.fullmatch(part) else (0, part) for part in path.split("/"))


def reads_mount() -> None:
    """Add every registered read to its app's router as a GET operation, then order each router's paths."""
    for spec in sorted(interfaces_load().values(), key=lambda s: s.name):
        router = _READ_ROUTERS[spec.app]
        router.add_api_operation(
            "{book}" + spec.path,
            ["GET"],
            _read_view(spec),
            response=_response(spec),
            summary=spec.summary or spec.help,
            description=spec.fn.__doc__,
            tags=[spec.group] if spec.group else None,
            openapi_extra=_openapi_extra(spec),
            by_alias=True,  # a schema field named after a Python keyword ("from") answers under its JSON name
        )
    for router in _READ_ROUTERS.values():
        router.path_operations = dict(sorted(router.path_operations.items(), key=lambda item: _specificity(item[0])))


# ── the write operations of the journaled writes that declare a REST door (kernel/journal_ops.py) ──


_APP_LABELS = {"core": "webnovel"}  # a journal op names its package; the core app's label is webnovel


def _write_view(declared: JournalOp) -> Callable[..., Any]:
    """The POST operation of one journaled write: ``book`` (and ``pk``) from the path, the body validated
    by the op's input schema, the door's ``run`` answering (with the declared status)."""
    door = declared.door
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("request", positional, annotation=HttpRequest)]
    params.append(inspect.Parameter("book", positional, annotation=str))
    if door.pk:
        params.append(inspect.Parameter("pk", positional, annotation=int))
    params.append(inspect.Parameter(door.body, positional, annotation=response_type(declared.schema)))

    def view(request: HttpRequest, book: str, **args: Any) -> Any:
        body = args[door.body]
        answer = door.run(book_get(slug=book), body, pk=args["pk"]) if door.pk else door.run(book_get(slug=book), body)
        return answer if door.status == 200 else Status(door.status, answer)

    view.__signature__ = inspect.Signature(params)  # what ninja reads the parameters from
    view.__name__ = door.name  # the URL name, as a hand-written view's
    view.__doc__ = door.doc
    return view


def writes_mount() -> None:
    """Add the REST POST of every journaled write whose door declares a ``path`` to its app's router.
    Before the reads: a path that has both (``/memory/facts``) lists its POST first."""
    for declared in journal_ops_load().values():
        door = declared.door
        if door is None or not door.path:
            continue
        response = response_type(door.response)
        _READ_ROUTERS[_APP_LABELS.get(declared.app, declared.app)].add_api_operation(
            "{book}" + door.path,
            ["POST"],
            _write_view(declared),
            response=response if door.status == 200 else {door.status: response},
            summary=door.summary,
            operation_id=f"{declared.app}_api_{door.name}",
        )


def _register_routers() -> None:
    writes_mount()
    reads_mount()
    # Each app's router checks a session user's permissions on that app's models (core/auth.py).
    api.add_router("/books/", core_router, auth=api_auth("webnovel"))
    api.add_router("/books/", threads_router, auth=api_auth("threads"))
    api.add_router("/books/", entities_router, auth=api_auth("entities"))
    api.add_router("/books/", storysystem_router, auth=api_auth("storysystem"))
    api.add_router("/books/", memory_router, auth=api_auth("memory"))
    api.add_router("/books/", continuity_router, auth=api_auth("webnovel"))
    api.add_router("/", unknown_router)  # last: it matches every path


# A path no operation matches (an unknown endpoint, a "/" inside a parameter) answers JSON like
# every other error, not Django's HTML 404 page.
unknown_router = Router()


@unknown_router.api_operation(
    ["GET", "POST", "PUT", "PATCH", "DELETE"], "{path:rest}", auth=None, include_in_schema=False
)
def endpoint_unknown(request: HttpRequest, rest: str) -> HttpResponse:
    raise NotFound(f"没有这个接口：{request.method} {request.path}", extra={"path": request.path})


_register_routers()
