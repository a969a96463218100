"""`python -m backend.serve [gunicorn options]`: check every setting, then run gunicorn with
`backend/gunicorn_conf.py` (what `make serve` and the container run).

gunicorn reads `WEB_CONCURRENCY` itself while it imports, before any config file, and a bad
value there ends in a bare `ValueError` traceback; checking the table first turns every bad
variable into one line naming it (`bad setting WEB_CONCURRENCY='abc': must be a whole
number`), exit status 2. `gunicorn -c backend/gunicorn_conf.py` still works and checks the
rest of the table in its master process.
"""

from __future__ import annotations

import sys
from pathlib import Path

from backend import settings

CONF = Path(__file__).resolve().parent / "gunicorn_conf.py"


def main(argv: list[str] | None = None) -> None:
    try:
        settings.load()
    except settings.SettingError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None
    from gunicorn.app.wsgiapp import run

    sys.argv = ["gunicorn", "-c", str(CONF), *(sys.argv[1:] if argv is None else argv)]
    run()


if __name__ == "__main__":
    main()
