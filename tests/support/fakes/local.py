"""What the local fakes of Google APIs share: an HTTP or a plaintext gRPC server on 127.0.0.1 in
this process (``start()``, ``stop()``), and the JSON reply an HTTP handler writes. The fakes
themselves (gcp.py, scheduler.py, ../gcloud.py) keep only their API."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import urlsplit

_Http = TypeVar("_Http", bound="LocalHttpServer")
_Grpc = TypeVar("_Grpc", bound="LocalGrpcServer")


def send_json(handler: BaseHTTPRequestHandler, code: int, body: Any,
              content_type: str = "application/json") -> None:
    """Answer the request ``handler`` is serving with ``code`` and ``body`` as JSON."""
    data = json.dumps(body).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def error(code: int, message: str, status: str) -> dict[str, Any]:
    """A Google API error body (``{"error": {code, message, status}}``)."""
    return {"error": {"code": code, "message": message, "status": status}}


def get_handler(answer: Callable[[str], tuple[int, Any]]) -> type[BaseHTTPRequestHandler]:
    """A quiet handler whose every GET is answered ``answer(path)``: (HTTP code, JSON body)."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            send_json(self, *answer(urlsplit(self.path).path))

    return Handler


class LocalHttpServer:
    """``self.url`` (``http://127.0.0.1:PORT``, no trailing slash), answered in a thread by the
    handler class a subclass passes to :meth:`_listen` in its ``__init__``."""

    def _listen(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self: _Http) -> _Http:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class LocalGrpcServer:
    """``self.target`` (``127.0.0.1:PORT``, plaintext) serving the unary methods of one gRPC
    service that a subclass passes to :meth:`_serve` in its ``__init__``."""

    def _serve(self, service: str, methods: dict[str, tuple[Callable[[Any, Any], Any], Any, Any]]) -> None:
        """``methods``: name → (function(request, context), request type, response type)."""
        import grpc

        handler = grpc.method_handlers_generic_handler(service, {
            name: grpc.unary_unary_rpc_method_handler(
                function, request_deserializer=request.deserialize, response_serializer=response.serialize)
            for name, (function, request, response) in methods.items()
        })
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.target = f"127.0.0.1:{self.port}"

    def start(self: _Grpc) -> _Grpc:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop(0)
