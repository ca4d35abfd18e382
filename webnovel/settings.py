"""Settings for webnovel: one env-driven file.

Every knob comes from the environment with a safe default, so the same file serves the
demo run, the tests, and a production deploy (see docs/deploy.md).
"""

import os
import sys
import sysconfig
import tempfile
from importlib.util import find_spec
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
# A checkout keeps its database, indexes and static files in var/ and staticfiles/ beside manage.py; an installed
# package (pip / pipx / uvx: BASE_DIR is site-packages) keeps them in the user's data directory instead.
CHECKOUT = (BASE_DIR / "manage.py").is_file()


def _user_data_dir() -> Path:
    """Where an installed webnovel keeps its data: the platform's per-user data directory (as platformdirs says)."""
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "webnovel"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "webnovel"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "webnovel"


DATA_DIR = Path(os.environ.get("WEBNOVEL_DATA_DIR") or (BASE_DIR / "var" if CHECKOUT else _user_data_dir()))
# The example books: examples/ of a checkout, or the copy the package installs under <prefix>/share/webnovel.
EXAMPLES_DIR = (
    BASE_DIR / "examples" if CHECKOUT else Path(sysconfig.get_path("data")) / "share" / "webnovel" / "examples"
)


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = _env_bool("DEBUG", False)
PRODUCTION = _env_bool("WEBNOVEL_PRODUCTION", False)
# A fixed development key is only acceptable for local runs: with it anyone can forge sessions and
# CSRF tokens. A production run without its own SECRET_KEY refuses to start.
_DEVELOPMENT_KEY = "django-insecure-webnovel-local-development-key-change-me"
SECRET_KEY = os.environ.get("SECRET_KEY", "").strip() or _DEVELOPMENT_KEY
if PRODUCTION and (SECRET_KEY == _DEVELOPMENT_KEY or len(SECRET_KEY) < 50):
    raise ImproperlyConfigured(
        "WEBNOVEL_PRODUCTION=1 需要在环境变量 SECRET_KEY 中设置至少 50 个字符的随机密钥"
        "（例如 python -c 'import secrets; print(secrets.token_urlsafe(60))'）；拒绝以开发密钥启动"
    )
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "webnovel.apps.AdminConfig",  # django.contrib.admin, its admin.py modules loaded by the URLconf
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "webnovel",
    "core",
    "recall",
    "bookfiles",
    "entities",
    "threads",
    "storysystem",
    "memory",
    "continuity",
    "dashboard",
    "agents",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "webnovel.urls"

# django-ninja is not an installed app: Django would import the package at start-up, and with it pydantic, in
# every process (~90 ms of a ~0.4 s `story` read that never builds the API). Its Swagger page's template and
# static files are taken from its folder instead (find_spec locates the package without importing it).
NINJA_DIR = Path(find_spec("ninja").origin).parent

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "webnovel" / "templates", NINJA_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "webnovel.wsgi.application"

_default_sqlite = f"sqlite:///{os.environ.get('SQLITE_PATH', DATA_DIR / 'db.sqlite3')}"
# Persistent connections (CONN_MAX_AGE seconds, default 60) spare each request a new connection;
# health checks drop a connection the server closed in between.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", _default_sqlite),
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", 60)),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers proceed while a writer works; IMMEDIATE takes the write lock at BEGIN so two
    # writers queue on the busy timeout instead of failing mid-transaction with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
    }
    # The test database is a file (one per test process), not Django's in-memory default: tests that
    # run two rebuilds in two threads need two real connections to one database.
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("SQLITE_TEST_PATH")
        or str(Path(tempfile.gettempdir()) / f"webnovel-test-{os.getpid()}.sqlite3")
    }
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
ATOMIC_REQUESTS = False

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "zh-hans"
TIME_ZONE = os.environ.get("TIME_ZONE", "Asia/Shanghai")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [("ninja", NINJA_DIR / "static" / "ninja")]
STATIC_ROOT = BASE_DIR / "staticfiles" if CHECKOUT else DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on a missing root before the first collectstatic
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "/admin/login/"

# Request bodies (extraction JSON, imports) are bounded; larger ones get a clear 413/422.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024))

# In-process rate limits ("count/seconds", per worker process; docs/hardening.md §6.4): regex
# searches and continuity checks per API key or login, failed admin logins per user name and per client address.
WEBNOVEL_REGEX_RATE = os.environ.get("WEBNOVEL_REGEX_RATE", "60/60")
WEBNOVEL_LOGIN_FAILURE_RATE = os.environ.get("WEBNOVEL_LOGIN_FAILURE_RATE", "10/900")
# continuity checks (a draft up to 200k characters, or a range of finalized chapters) per key or login
WEBNOVEL_CONTINUITY_RATE = os.environ.get("WEBNOVEL_CONTINUITY_RATE", "60/60")

# Where books live when a command gets a bare slug instead of a folder.
WEBNOVEL_BOOKS_DIR = Path(os.environ.get("WEBNOVEL_BOOKS_DIR") or (EXAMPLES_DIR if CHECKOUT else DATA_DIR / "books"))
# The chapter indexers, after-chapter hooks and canon-change reporters are registered by their apps in
# AppConfig.ready() (kernel/indexing.py); defining WEBNOVEL_CHAPTER_INDEXERS / _AFTER_CHAPTER_HOOKS /
# _CANON_CHANGE_REPORTERS here would replace a list (tests use it to switch hooks off).

# Book files and reference tables (bookfiles/parser is pure Python: the rebuilder passes these in). A
# chapter is ~10 KB and a whole 10-million-character outline ~30 MB; anything bigger is a mistake.
WEBNOVEL_FILE_MAX_BYTES = int(os.environ.get("WEBNOVEL_FILE_MAX_BYTES", 64 * 1024 * 1024))
# Symlinks that leave the book folder are refused unless this is 1: a book's files would then be whatever
# the link points at (/etc, /proc/1/cwd), read by the rebuilder and served to any read key.
WEBNOVEL_BOOK_LINKS_OUTSIDE = os.environ.get("WEBNOVEL_BOOK_LINKS_OUTSIDE", "") == "1"

# Memory: the context pack's mode (full, or simple as a fallback), where BM25 segments are kept between
# processes ("off" keeps them in memory only, as the tests do), and the optional embeddings endpoint
# (OpenAI-compatible) that re-ranks BM25's candidates.
WEBNOVEL_MEMORY_PACK = os.environ.get("WEBNOVEL_MEMORY_PACK") or "full"


def _index_dir(name: str, default: Path) -> Path | None:
    """A BM25 index's disk folder (kernel/bm25.py) from the environment: "off" keeps it in memory only."""
    value = os.environ.get(name, "").strip()
    return None if value.lower() in {"off", "0", "none"} else Path(value) if value else default


WEBNOVEL_MEMORY_INDEX_DIR = _index_dir("WEBNOVEL_MEMORY_INDEX_DIR", DATA_DIR / "memory-index")
# The reference library's search index, kept between processes (storysystem/search.py; "off": in memory only).
WEBNOVEL_REFERENCE_INDEX_DIR = _index_dir("WEBNOVEL_REFERENCE_INDEX_DIR", DATA_DIR / "reference-index")
# Semantic recall (recall/, docs/semantic-recall.md): on unless "off"; the vector cache (a file index keyed
# by text hash, one folder per model version); engine threads (1 by default: on a busy two-core machine one
# thread embedded 4× faster than two, whose OpenMP workers spin against each other; 0: all cores).
WEBNOVEL_RECALL = os.environ.get("WEBNOVEL_RECALL", "on").strip().lower() not in {"off", "0", "no", "false"}
WEBNOVEL_RECALL_DIR = Path(os.environ.get("WEBNOVEL_RECALL_DIR", "").strip() or BASE_DIR / "var" / "recall")
WEBNOVEL_RECALL_THREADS = int(os.environ.get("WEBNOVEL_RECALL_THREADS", "1") or 0)
# Worker processes for a pass that embeds many texts (a rebuild, `manage.py embed`): one engine thread each,
# both cores of this machine class by default (recall/vectors.py); 1: in the calling process.
WEBNOVEL_RECALL_WORKERS = max(1, int(os.environ.get("WEBNOVEL_RECALL_WORKERS", "") or min(2, os.cpu_count() or 1)))
WEBNOVEL_EMBEDDINGS_URL = os.environ.get("WEBNOVEL_EMBEDDINGS_URL", "").strip()
WEBNOVEL_EMBEDDINGS_MODEL = os.environ.get("WEBNOVEL_EMBEDDINGS_MODEL", "").strip()
WEBNOVEL_EMBEDDINGS_API_KEY = os.environ.get("WEBNOVEL_EMBEDDINGS_API_KEY", "")
# seconds; parsed at each call, so a malformed value fails over to BM25 like an unreachable endpoint
WEBNOVEL_EMBEDDINGS_TIMEOUT = os.environ.get("WEBNOVEL_EMBEDDINGS_TIMEOUT", "5")

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = _env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", 31536000))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
