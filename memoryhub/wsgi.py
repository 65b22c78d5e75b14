"""The WSGI application (gunicorn, and `manage.py runserver` through WSGI_APPLICATION)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
application = get_wsgi_application()


def _load_encoder() -> None:
    """Load the embedding model now, not on the first semantic read (docs/atoms.md "Read path costs").
    Under gunicorn the post_worker_init hook of gunicorn.conf.py does it after the fork:
    this module may be imported in the master (`--preload`), and a model or a thread made
    there would be inherited by every forked worker. Elsewhere (runserver, a single
    process) it loads on a thread, so the server answers at once; a request that needs the
    encoder meanwhile waits for that load rather than starting another."""
    if os.environ.get("SERVER_SOFTWARE", "").startswith("gunicorn/"):
        return
    from memoryhub import process_start

    process_start.load_in_background()


_load_encoder()
