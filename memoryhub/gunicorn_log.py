"""gunicorn's logger for memoryhub (gunicorn.conf.py `logger_class`): the access log shows
routes, never paths, query strings or referrers (they carry agent, namespace and key names;
docs/operations.md "Logs"), and the error log gets the scrub filter."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from gunicorn.glogging import Logger

from memoryhub.log_scrub import WITHHELD, install, route_of

# Atoms an operator's access_log_format could name that hold a path, a query string, a
# referrer or a credential.
_ROUTE_ATOMS = ("{path_info}e", "{raw_uri}e", "{request_uri}e")
_WITHHELD_ATOMS = ("{query_string}e", "{http_referer}e", "{referer}i", "{authorization}i", "{cookie}i",
                   "{http_authorization}e", "{http_cookie}e", "{set-cookie}o")


class GunicornLogger(Logger):
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        install(self.error_log)

    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        route = route_of(environ.get("PATH_INFO", ""))
        atoms["r"] = f"{environ.get('REQUEST_METHOD')} {route} {environ.get('SERVER_PROTOCOL')}"
        atoms["U"] = route
        atoms["q"] = atoms["f"] = "-"
        for name in _ROUTE_ATOMS:
            atoms[name] = route
        for name in _WITHHELD_ATOMS:
            if name in atoms:
                atoms[name] = WITHHELD
        return atoms

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None:
        if msg == "%s %s" and len(args) == 2 and str(args[1]).startswith("/"):  # the default pre_request hook
            args = (args[0], route_of(str(args[1])))
        super().debug(msg, *args, **kwargs)

    def exception(self, msg: str, *args: Any, **kwargs: Any) -> None:
        if msg.startswith("Error handling request %s") and args:  # gunicorn's own line, the raw URI last
            args = (*args[:-1], route_of(unquote(urlsplit(str(args[-1])).path)))
        super().exception(msg, *args, **kwargs)
