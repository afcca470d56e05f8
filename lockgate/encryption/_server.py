"""``lockgate codec-server``: the HTTP endpoint the Temporal UI and CLI decode payloads through.

The Temporal UI (in the browser) and the ``temporal`` CLI POST protobuf-JSON ``Payloads`` to
``/decode`` to show what a run carries, and to ``/encode`` to send a signal or update (a gate's
answer) encrypted. The server holds the payload keys, so it is a decryption oracle: whoever may
call it may read every run. Hence the access rule (:class:`CodecAccess`): a request is answered
only if it carries one of the server's bearer tokens. An ``Origin`` header keeps other web pages
out (a page cannot forge it), but any program can write one, so an origin alone is no access.
The one exception is named by the operator: the local mode (``tokenless_local``), for a Temporal
UI on this machine that cannot send a token (the UI sends one only over https with its own
login configured). It answers the allowed origins without a token, and the server then binds
only to a loopback address: every program on this machine can decrypt, nobody else can.

It is the standard library's threading HTTP server: the codec is CPU work of microseconds, and
nothing here needs an event loop or a dependency.
"""

from __future__ import annotations

import hmac
import http.server
import ipaddress
import json
import logging
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from lockgate._errors import ConfigurationError
from lockgate.encryption._codec import EncryptionCodec, PayloadDecryptionError

__all__ = ["CODEC_SERVER_TOKEN_ENV", "CodecAccess", "CodecAccessError", "CodecServer"]

CODEC_SERVER_TOKEN_ENV = "LOCKGATE_CODEC_SERVER_TOKEN"
"""The environment variable that may hold the codec server's bearer token."""

_log = logging.getLogger("lockgate.codec_server")
_MAX_BODY = 8 * 1024 * 1024
_ALLOWED_HEADERS = "content-type, x-namespace, authorization, authorization-extras"


@dataclass(frozen=True)
class CodecAccess:
    """Who the codec server answers.

    Attributes:
        tokens: Bearer tokens: a request with ``Authorization: Bearer <token>`` (what
            ``temporal --codec-auth "Bearer <token>"`` sends) is answered.
        origins: Browser origins (``http://localhost:8233``) whose pages may read the answers
            (CORS). An origin grants nothing by itself: its requests need a token too, unless
            ``tokenless_local``. ``localhost`` and ``127.0.0.1`` are different origins: list
            both if both are used.
        namespaces: When given, only requests whose ``X-Namespace`` is one of these.
        tokenless_local: The local mode: requests from ``origins`` are answered without a
            token, and the server refuses to bind anything but a loopback address. For a
            Temporal UI on this machine that sends no token (a dev server's); any program on
            this machine can then decrypt by writing that ``Origin``.
    """

    tokens: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = field(default=())
    tokenless_local: bool = False

    def refusal(self, headers: Any) -> str | None:
        """Why a request with these headers is refused; None when it is answered."""
        namespace = headers.get("X-Namespace")
        if self.namespaces and namespace not in self.namespaces:
            return f"namespace {namespace!r} is not served here"
        authorization = headers.get("Authorization") or ""
        scheme, _, presented = authorization.partition(" ")
        if scheme.lower() == "bearer" and presented:
            if any(hmac.compare_digest(presented.strip(), token) for token in self.tokens):
                return None
            return "the bearer token is not one of this server's"
        origin = headers.get("Origin")
        if origin and origin not in self.origins:
            return f"origin {origin!r} is not allowed"
        if origin and self.tokenless_local:
            return None
        if origin:
            return (
                f"origin {origin!r} is allowed, but an Origin header is no access (any program "
                "can write one): send Authorization: Bearer <token>, or run the server in its "
                "local mode, on loopback, for a UI on this machine that cannot send one"
            )
        return "no bearer token (send Authorization: Bearer <token>)"


class CodecAccessError(ConfigurationError):
    """A codec server was asked to answer without a token somewhere other than loopback."""


def _only_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one ("" is every interface)."""
    if not host:
        return False
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    addresses = {str(info[4][0]).split("%", 1)[0] for info in found}
    return bool(addresses) and all(
        ipaddress.ip_address(address).is_loopback for address in addresses
    )


class CodecServer:
    """Serves ``/encode`` and ``/decode`` with one codec, in a background thread.

    Example::

        server = CodecServer(EncryptionCodec(PayloadKeys.load("payload.keys")),
                             CodecAccess(tokens=(token,), origins=("https://temporal.example",)),
                             port=8081)
        server.start()      # then: temporal server start-dev --ui-codec-endpoint server.url
        ...
        server.stop()

    Args:
        codec: The codec (holding the deployment's payload keys).
        access: Who is answered.
        host: The address to bind; loopback by default.
        port: The port; 0 picks a free one (see :attr:`url`).

    Raises:
        CodecAccessError: ``access`` is the local mode and ``host`` is not a loopback address.
    """

    def __init__(
        self, codec: EncryptionCodec, access: CodecAccess, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        if access.tokenless_local and not _only_loopback(host):
            # Checked before binding: not even a moment on another address.
            raise CodecAccessError(
                "The codec server's local mode answers without a token, so it binds only to a "
                f"loopback address (127.0.0.1, ::1, localhost), not {host!r}: give callers a "
                f"token ({CODEC_SERVER_TOKEN_ENV}) to serve another address."
            )
        self.codec = codec
        self.access = access
        self._httpd = http.server.ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The endpoint to give the UI (``--ui-codec-endpoint``) and CLI (``--codec-endpoint``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        """Starts serving in a daemon thread."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="lockgate-codec-server", daemon=True
        )
        self._thread.start()

    def serve_forever(self) -> None:
        """Serves in this thread until :meth:`stop` is called from another."""
        self._httpd.serve_forever()

    def stop(self) -> None:
        """Stops serving and closes the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def transform(self, path: str, body: bytes) -> bytes:
        """The answer to a POST of ``body`` to ``path`` (``/encode`` or ``/decode``).

        Raises:
            ValueError: The body is not protobuf-JSON ``Payloads``, or a payload does not
                decrypt; the message says which.
        """
        payloads = Payloads()
        try:
            json_format.Parse(body, payloads)
        except (json_format.ParseError, UnicodeDecodeError) as error:
            raise ValueError(f"The body is not protobuf-JSON Payloads: {error}") from None
        step = self.codec.encode_one if path == "/encode" else self.codec.decode_one
        out = Payloads(payloads=[step(payload) for payload in payloads.payloads])
        return json_format.MessageToJson(out).encode("utf-8")


def _handler_for(server: CodecServer) -> type[http.server.BaseHTTPRequestHandler]:
    class _Handler(http.server.BaseHTTPRequestHandler):
        server_version = "lockgate-codec-server"
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            _log.debug(format, *args)

        def _cors(self) -> None:
            origin = self.headers.get("Origin")
            if origin and origin in server.access.origins:
                self.send_header("Access-Control-Allow-Origin", origin)
                self.send_header("Access-Control-Allow-Credentials", "true")
                self.send_header("Vary", "Origin")

        def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self._cors()
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _refuse(self, status: int, sentence: str) -> None:
            self._reply(status, json.dumps({"message": sentence}).encode("utf-8"))

        def do_OPTIONS(self) -> None:
            # A CORS preflight carries no credentials: it is answered for allowed origins only,
            # and grants nothing by itself (the POST is judged on its own).
            origin = self.headers.get("Origin")
            if not origin or origin not in server.access.origins:
                self._refuse(403, f"origin {origin!r} is not allowed")
                return
            self.send_response(204)
            self._cors()
            self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", _ALLOWED_HEADERS)
            self.send_header("Access-Control-Max-Age", "600")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0]
            if path not in ("/encode", "/decode"):
                self._refuse(404, f"{path} is not served: POST /encode or /decode")
                return
            refusal = server.access.refusal(self.headers)
            if refusal is not None:
                self.close_connection = True
                self._refuse(401, f"Not allowed: {refusal}.")
                _log.warning(
                    "codec server refused %s from %s: %s", path, self.client_address[0], refusal
                )
                return
            declared = self.headers.get("Content-Length") or "0"
            if not declared.isdigit():
                # read() of a negative length would read until the caller hangs up.
                self.close_connection = True
                self._refuse(411, "The body needs a Content-Length of 0 or more bytes.")
                return
            length = int(declared)
            if length > _MAX_BODY:
                self.close_connection = True
                self._refuse(413, f"The body is over {_MAX_BODY} bytes, the most read here.")
                return
            try:
                answer = server.transform(path, self.rfile.read(length))
            except (ValueError, PayloadDecryptionError) as error:
                self._refuse(400, str(error))
                return
            self._reply(200, answer)

    return _Handler
