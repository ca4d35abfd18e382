"""WSGI entry point (gunicorn webnovel.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
application = get_wsgi_application()
