"""The ASGI application; it loads the embedding model as memoryhub/wsgi.py does."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
application = get_asgi_application()

# uvicorn's access log names every path (docs/operations.md "Logs").
from memoryhub.log_scrub import install_on_servers  # noqa: E402 - Django is set up above

install_on_servers()

# Not under gunicorn, whose post_worker_init hook (gunicorn.conf.py) loads it after the fork.
if not os.environ.get("SERVER_SOFTWARE", "").startswith("gunicorn/"):
    from memoryhub import process_start

    process_start.load_in_background()
