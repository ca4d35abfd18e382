"""ASGI entry point (``uvicorn webnovel.asgi:application``): Django for every path, and the MCP server
over streamable HTTP at ``/mcp/<book>`` (agents/http.py), which also owns the ASGI lifespan."""

import os
import warnings

from django.core.asgi import get_asgi_application

from webnovel.cli import django_start

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
django_start()  # the start's objects frozen: the collector's full passes in the server never scan them
django_application = get_asgi_application()  # Django is set up: import the MCP mount after it

from agents.http import McpMount  # noqa: E402

# whitenoise's file responses iterate synchronously; Django's ASGI handler serves them (in a thread)
# and warns once per static file, which would bury the server's log.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous iterators")

application = McpMount(django_application)
