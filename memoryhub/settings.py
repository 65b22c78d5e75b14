"""memoryhub settings, read from the environment in one place.

Defaults are the embedded mode: a SQLite file under var/, Celery tasks run eagerly
in-process and a local-memory cache. Setting REDIS_URL switches on the real broker,
the Redis cache and cache-backed throttling. MEMORYHUB_ENV=production makes the
secret key and allowed hosts mandatory and turns on the HTTPS hardening.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_float(name: str, default: float, low: float, high: float) -> float:
    """A number from `low` to `high`; anything else stops the start with its name."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:  # NaN fails too
        raise ImproperlyConfigured(f"{name} must be a number from {low:g} to {high:g}, got {raw!r}")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in env_str(name, default).split(",") if part.strip()]


MEMORYHUB_ENV = env_str("MEMORYHUB_ENV", "local")
PRODUCTION = MEMORYHUB_ENV == "production"

VAR_DIR = Path(env_str("MEMORYHUB_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)
# Root of the per-tenant volumes the memory files are projected onto
# (<root>/<tenant>/memories/USER.md, MEMORY.md). Unset: var/volumes; set empty: no files.
_volume_root = os.environ.get("MEMORYHUB_VOLUME_ROOT")
MEMORYHUB_VOLUME_ROOT: Path | None = (
    Path(_volume_root) if _volume_root else None if _volume_root == "" else VAR_DIR / "volumes"
)


def _secret_key() -> str:
    configured = env_str("SECRET_KEY")
    if configured:
        return configured
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY is required when MEMORYHUB_ENV=production")
    # Local use: generate once and keep it, so sessions survive restarts.
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(64))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)

if PRODUCTION:
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("ALLOWED_HOSTS is required when MEMORYHUB_ENV=production")
else:
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "memoryhub",
    "tenants",
    "atoms",
    "mcp_server",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every response (policy below).
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memoryhub.api.middleware.ApiErrorMiddleware",
    # 413 for oversized API bodies before anything reads them (memoryhub/api/limits.py).
    "memoryhub.api.limits.ApiBodyLimitMiddleware",
    # 400 INVALID_CHARACTER for U+0000 or non-UTF-8 bytes in API paths and query strings.
    "memoryhub.api.url_input.UrlInputMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # 400 for U+0000 in a posted page form, once the person is known (memoryhub/page_input.py).
    "memoryhub.page_input.PageInputMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "memoryhub.urls"
WSGI_APPLICATION = "memoryhub.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tenants.context_processors.tenant_nav",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'memoryhub.sqlite3'}")
# Seconds between the passive WAL checkpoints of a SQLite file's checkpoint thread; 0 leaves
# checkpoints to the commits (docs/operations.md "SQLite checkpoints").
SQLITE_CHECKPOINT_SECONDS = env_float("SQLITE_CHECKPOINT_SECONDS", 0.5, 0, 3600)
if 0 < SQLITE_CHECKPOINT_SECONDS < 0.05:  # a thread that never sleeps
    raise ImproperlyConfigured("SQLITE_CHECKPOINT_SECONDS must be 0 or at least 0.05")
SQLITE_WAL_AUTOCHECKPOINT = env_int("SQLITE_WAL_AUTOCHECKPOINT", 10_000)
if SQLITE_WAL_AUTOCHECKPOINT < 1:  # 0 or less would turn the commits' checkpoints off
    raise ImproperlyConfigured("SQLITE_WAL_AUTOCHECKPOINT must be a number of pages of 1 or more")
# PostgreSQL only: the read path's statements are prepared on the server (below).
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)
_db = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _db["OPTIONS"] = {
        # WAL lets readers run beside one writer; IMMEDIATE takes the write lock at BEGIN
        # so two writers queue on busy_timeout instead of failing on a lock upgrade.
        # wal_autocheckpoint is a backstop: each process checkpoints on a thread of its own
        # (memoryhub/sqlite_checkpoints.py, docs/operations.md "SQLite checkpoints").
        "init_command": (f"PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                         f"PRAGMA wal_autocheckpoint={SQLITE_WAL_AUTOCHECKPOINT};"),
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
else:
    _db["CONN_HEALTH_CHECKS"] = True
    # The read path's repeated statements are prepared on the server (memoryhub/prepared.py,
    # docs/operations.md "PostgreSQL"): psycopg prepares a statement the second time a
    # connection runs it, through the server-binding cursors that module hands out; Django's
    # own cursors bind on the client and never prepare. Off: nothing is prepared.
    _db.setdefault("OPTIONS", {})["prepare_threshold"] = 1 if DB_PREPARED_STATEMENTS else None
    # The planner's cost of a random page read, sent with each new connection (a startup
    # option: no extra round trip). PostgreSQL's default of 4 assumes spinning disks; with
    # the working set cached it chose whole-table scans to join a read's 216 best postings to
    # their revisions (docs/operations.md "PostgreSQL"). Empty: the server's own setting.
    _page_cost = env_str("DB_RANDOM_PAGE_COST", "1.1").strip()
    if _page_cost:
        try:
            if not 0 < float(_page_cost) < 1000:
                raise ValueError(_page_cost)
        except ValueError as exc:
            raise ImproperlyConfigured("DB_RANDOM_PAGE_COST must be a number above 0 and below 1000, "
                                       "or empty") from exc
        # Added to what DATABASE_URL's own `options` (or currentSchema) put there, never over it;
        # a URL that sets the cost itself keeps its value.
        _options = _db.setdefault("OPTIONS", {})
        _given = str(_options.get("options", "")).strip()
        if "random_page_cost" not in _given:
            _options["options"] = f"{_given} -c random_page_cost={float(_page_cost)}".strip()
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: cache, broker, throttling ---------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "mh",
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Celery -------------------------------------------------------------------------------
# CELERY_BROKER_URL names a broker other than Redis; `make run` uses "filesystem://" (a
# queue in var/broker that needs no server) so that a worker indexes outside web requests.
_BROKER = env_str("CELERY_BROKER_URL")
CELERY_BROKER_URL = REDIS_URL or _BROKER or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or None
# Without any broker, tasks run in-process right after the commit that queued them.
CELERY_TASK_ALWAYS_EAGER = not (REDIS_URL or _BROKER)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 300)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 270)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "memoryhub")
# Redis redelivers a message its worker has not acknowledged within this many seconds: a
# task whose worker was killed outright (kill -9, a lost host) runs again after it. A
# message stays unacknowledged while it waits for its countdown (retry backoff, at most
# 300 s: tests/memoryhub/test_celery_settings.py) and while it runs (CELERY_TASK_TIME_LIMIT),
# so the default is that countdown plus twice the time limit, one of them a margin; a
# shorter one would run slow or retried tasks twice (docs/operations.md "Processes").
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 2 * CELERY_TASK_TIME_LIMIT + 300)
if CELERY_VISIBILITY_TIMEOUT <= CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured("CELERY_VISIBILITY_TIMEOUT must be longer than CELERY_TASK_TIME_LIMIT, "
                               "or running tasks are delivered twice")
# A lost connection to Redis must not hang a web request that enqueues work. Every worker
# looks for messages past their visibility timeout every 10 s (kombu's default throttle
# would make that every 100 s): a scan of one small sorted set.
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {"socket_connect_timeout": 2, "max_retries": 1,
                                                   "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
                                                   "unacked_restore_throttle": 1}
if not REDIS_URL and CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = VAR_DIR / "broker"
    _queue_dir.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(_queue_dir), "data_folder_out": str(_queue_dir),
                                       "control_folder": str(_queue_dir / "control")}
CELERY_BEAT_SCHEDULE = {
    "heartbeat": {"task": "memoryhub.heartbeat", "schedule": 30.0},
    # Sends the tasks the broker refused while it was down (memoryhub/enqueue.py).
    "outbox-sweep": {"task": "memoryhub.outbox_sweep", "schedule": 30.0},
    # Queues indexing for any policy whose feed is behind, and refreshes vector files.
    "atoms-index-sweep": {"task": "atoms.index_sweep", "schedule": 60.0},
    # Queues a rescan of memory entries scanned with an older threat pattern set.
    "memory-rescan-due": {"task": "tenants.memory_rescan_due", "schedule": crontab(hour=3, minute=17)},
}
# How old the newest worker heartbeat may be before /healthz calls the worker down.
WORKER_HEARTBEAT_MAX_AGE = env_int("WORKER_HEARTBEAT_MAX_AGE", 120)

# --- Auth, sessions, security ---------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Passwords go through the login throttle (memoryhub/login_throttle.py, docs/operations.md).
AUTHENTICATION_BACKENDS = ["memoryhub.login_throttle.ThrottledModelBackend"]
MEMORYHUB_LOGIN_FAILURES_PER_CLIENT = env_int("MEMORYHUB_LOGIN_FAILURES_PER_CLIENT", 5)
MEMORYHUB_LOGIN_FAILURES_PER_USERNAME = env_int("MEMORYHUB_LOGIN_FAILURES_PER_USERNAME", 50)
MEMORYHUB_LOGIN_WINDOW_SECONDS = env_int("MEMORYHUB_LOGIN_WINDOW_SECONDS", 900)
# The header in which the TLS proxy passes the client's address (e.g. X-Forwarded-For; its
# last entry is used). Empty: REMOTE_ADDR, which behind a proxy is the proxy's address.
MEMORYHUB_CLIENT_IP_HEADER = env_str("MEMORYHUB_CLIENT_IP_HEADER")
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# django-csp: nothing inline and nothing from elsewhere. The API docs pages get their
# exceptions in memoryhub/urls.py; htmx is configured not to inject styles (base.html).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
if PRODUCTION:
    # Behind a TLS-terminating proxy that sets X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    # /healthz is probed over plain HTTP by load balancers.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# Largest request body; the Atom write endpoint is the biggest user (20 MiB).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 20 * 1024 * 1024)
# The KV endpoints refuse larger bodies before parsing them (413 LIMIT_EXCEEDED).
MEMORYHUB_KV_MAX_BODY_BYTES = env_int("MEMORYHUB_KV_MAX_BODY_BYTES", 8 * 1024 * 1024)

# --- I18N, static -------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Outside production WhiteNoise serves straight from the source folders, so `make run`
# needs no collectstatic step; production serves the collected, hashed files.
WHITENOISE_USE_FINDERS = not PRODUCTION
WHITENOISE_AUTOREFRESH = not PRODUCTION  # WhiteNoise warns on every start without it
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# --- REST framework, OpenAPI --------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenants.permissions.HasApiKey"],
    "DEFAULT_THROTTLE_CLASSES": ["tenants.throttling.ApiKeyRateThrottle"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Strict JSON for every body: depth, duplicate keys, U+0000 and lone surrogates (docs/api.md).
    "DEFAULT_PARSER_CLASSES": ["memoryhub.api.parsers.StrictJSONParser"],
    "EXCEPTION_HANDLER": "memoryhub.api.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
# Requests per minute per API key unless the tenant sets its own `api_rate_per_minute`.
MEMORYHUB_DEFAULT_API_RATE_PER_MINUTE = env_int("MEMORYHUB_DEFAULT_API_RATE_PER_MINUTE", 6000)

SPECTACULAR_SETTINGS = {
    "TITLE": "memoryhub API",
    "DESCRIPTION": (
        "Long-term memory for AI agents: key-value memory, memory files and Atoms. "
        "Authenticate with `Authorization: Bearer mh_<prefix>_<secret>`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # The steps of a memory-file batch (a write, or an edited approval) share one enum.
    "ENUM_NAME_OVERRIDES": {"MemoryOperationActionEnum": ["add", "replace", "remove"]},
    # Every operation documents the one error shape (memoryhub/api/schema.py).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "memoryhub.api.schema.document_errors",
                             "memoryhub.api.schema.document_path_parameters"],
}

# --- Atoms ---------------------------------------------------------------------------------
# A dotted path to a zero-argument callable returning epoch milliseconds (tests move time).
ATOMS_CLOCK: str | None = env_str("ATOMS_CLOCK") or None
ATOMS_AVAILABILITY_MODELS = ["atoms.core.availability.AdaptiveUse"]
# Classes a deployment or a tenant's atoms_config.embedding may name (nothing else is imported).
# ATOMS_EMBEDDING_EXTRA_PROVIDERS adds an operator's own classes (dotted paths, comma-separated).
ATOMS_EMBEDDING_PROVIDERS = ["atoms.embedding.MiniLMProvider", "atoms.core.embedding.FakeHashProvider",
                             *env_list("ATOMS_EMBEDDING_EXTRA_PROVIDERS")]
# ATOMS_EMBEDDING: "minilm" (the default, offline all-MiniLM-L6-v2), "fake" (deterministic,
# for tests and demos without torch) or "none" (lexical recall only).
_EMBEDDINGS: dict[str, dict[str, Any] | None] = {
    "minilm": {"class": "atoms.embedding.MiniLMProvider", "options": {}},
    "fake": {"class": "atoms.core.embedding.FakeHashProvider",
             "options": {"dimensions": env_int("ATOMS_EMBEDDING_FAKE_DIMENSIONS", 64)}},
    "none": None,
}
_embedding = env_str("ATOMS_EMBEDDING", "minilm")
if _embedding not in _EMBEDDINGS:
    raise ImproperlyConfigured(f"ATOMS_EMBEDDING must be one of {sorted(_EMBEDDINGS)}, not {_embedding!r}")
ATOMS_EMBEDDING_PROVIDER = _EMBEDDINGS[_embedding]
# Where workers write the approximate-nearest-neighbour files (web processes open them
# read-only); "" keeps vectors in the database only and searches them exactly.
_vector_root = os.environ.get("ATOMS_VECTOR_INDEX_ROOT")
ATOMS_VECTOR_INDEX_ROOT: Path | None = (
    VAR_DIR / "vector-index" if _vector_root is None else (Path(_vector_root) if _vector_root.strip() else None)
)
# torch threads of the MiniLM encoder: web processes (default 1: one short query each, no
# oversubscription) and Celery workers (default 0: torch's own choice, every core).
ATOMS_TORCH_THREADS = env_int("ATOMS_TORCH_THREADS", 1)
ATOMS_WORKER_TORCH_THREADS = env_int("ATOMS_WORKER_TORCH_THREADS", 0)
# Queries encoded with a bfloat16 copy of MiniLM's transformer: "auto" where the CPU has
# native bfloat16 products, "on", "off" (docs/atoms.md "Query vectors in bfloat16").
ATOMS_QUERY_BF16 = env_str("ATOMS_QUERY_BF16", "auto")
if ATOMS_QUERY_BF16 not in ("auto", "on", "off"):
    raise ImproperlyConfigured(f"ATOMS_QUERY_BF16 must be auto, on or off, not {ATOMS_QUERY_BF16!r}")
# Events per step of the indexing task: the encoder pads each call to its longest text, so
# larger calls waste less (docs/atoms.md "Workers"; docs/benchmarks.md "Semantic index").
ATOMS_INDEX_TASK_STEP = env_int("ATOMS_INDEX_TASK_STEP", 256)
# Nearest entries a read or search takes from the vector index per signal text.
ATOMS_CURSOR_TTL_MS = env_int("ATOMS_CURSOR_TTL_MS", 300_000)
ATOMS_REPLAY_RETENTION_DAYS = env_int("ATOMS_REPLAY_RETENTION_DAYS", 30)
# The UI's purge task (atoms.purge_run): maxWork per purge call, and seconds per task run
# before it queues itself again with the rest.
ATOMS_PURGE_SLICE_WORK = env_int("ATOMS_PURGE_SLICE_WORK", 20_000)
ATOMS_PURGE_SLICE_SECONDS = env_int("ATOMS_PURGE_SLICE_SECONDS", 20)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # No stored content or name in any log line: paths become routes, database errors lose
    # their values (memoryhub/log_scrub.py). It changes the record itself, so it must sit on
    # the first handler of the root logger; add it to any handler you add elsewhere.
    "filters": {"scrub": {"()": "memoryhub.log_scrub.ScrubFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["scrub"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # The MCP SDK logs a line per request at INFO (mcp_server/, docs/mcp.md).
    # Django's defaults give `django` (and so django.request) and `django.server` (runserver's
    # request lines) handlers of their own that bypass the root's scrub filter: send both to
    # the root instead (docs/operations.md "Logs").
    "loggers": {"django.db.backends": {"level": "WARNING"}, "mcp": {"level": "WARNING"},
                "django": {"handlers": [], "level": env_str("LOG_LEVEL", "INFO"), "propagate": True},
                "django.server": {"handlers": [], "level": env_str("LOG_LEVEL", "INFO"), "propagate": True}},
}
