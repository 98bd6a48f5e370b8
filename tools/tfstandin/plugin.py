"""The stand-in provider as a process: go-plugin's handshake and the gRPC server around
``server.Provider`` (tools/tfstandin/server.py).

Two ways to run it:

* ``plugin.py SCHEMA.json``: what Terraform starts from the filesystem mirror that
  ``tools/tfstandin/install.py`` writes (a managed plugin, one process per provider per command,
  AutoMTLS: one line on stdout ``1|6|unix|<socket>|grpc|<server cert, base64 DER>``; Terraform trusts
  exactly that certificate; ``Shutdown`` stops it);
* ``plugin.py --reattach SCHEMA.json``: one long-lived process that many Terraform runs reattach to
  (``TF_REATTACH_PROVIDERS``; tests/support/terraform.py starts one per provider release per test
  process).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
import threading
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from tf.gen import grpc_controller_pb2 as controller_pb
from tf.gen import grpc_controller_pb2_grpc as controller_rpc
from tf.gen import grpc_stdio_pb2_grpc as stdio_rpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import Provider, rpc, view  # noqa: E402  (the sibling module of this script)


def _certificate(cache: Path) -> tuple[bytes, bytes, bytes]:
    """(key PEM, cert PEM, cert DER) of a self-signed localhost certificate, cached in ``cache``."""
    if cache.exists():
        data = json.loads(cache.read_text())
        return data["key"].encode(), data["cert"].encode(), base64.b64decode(data["der"])
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=True,
                                         data_encipherment=False, key_agreement=True, key_cert_sign=True,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    der = cert.public_bytes(serialization.Encoding.DER)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"key": key_pem.decode(), "cert": cert_pem.decode(), "der": base64.b64encode(der).decode()}))
    os.chmod(tmp, 0o600)
    os.replace(tmp, cache)
    return key_pem, cert_pem, der


def serve(schema_path: Path) -> int:
    if os.environ.get("TF_PLUGIN_MAGIC_COOKIE") != "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2":
        print("This binary is a Terraform plugin (tpubuild's stand-in provider): Terraform starts it.", file=sys.stderr)
        return 1
    stop = threading.Event()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    rpc.add_ProviderServicer_to_server(Provider(schema_path), server)

    class Controller(controller_rpc.GRPCControllerServicer):
        def Shutdown(self, request: Any, context: Any) -> Any:
            stop.set()
            return controller_pb.Empty()

    class Stdio(stdio_rpc.GRPCStdioServicer):
        def StreamStdio(self, request: Any, context: Any) -> Any:
            return iter([])

    controller_rpc.add_GRPCControllerServicer_to_server(Controller(), server)
    stdio_rpc.add_GRPCStdioServicer_to_server(Stdio(), server)
    key_pem, cert_pem, der = _certificate(schema_path.with_name("standin-cert.json"))
    with tempfile.TemporaryDirectory(prefix="tfstandin-") as tmp:
        sock = f"{tmp}/plugin.sock"
        creds = grpc.ssl_server_credentials([(key_pem, cert_pem)], require_client_auth=False)
        server.add_secure_port(f"unix://{sock}", creds)
        server.start()
        print(f"1|6|unix|{sock}|grpc|{base64.b64encode(der).decode().rstrip('=')}", flush=True)
        try:
            while not stop.wait(0.05):
                pass
        except KeyboardInterrupt:
            pass
        server.stop(grace=0.2)
    return 0


def _listen(provider: Provider, folder: str, name: str) -> tuple[grpc.Server, str]:
    """A gRPC server for ``provider`` on a new unix socket in ``folder``; Shutdown is ignored
    (the process belongs to whoever started it, not to a Terraform run)."""

    class Controller(controller_rpc.GRPCControllerServicer):
        def Shutdown(self, request: Any, context: Any) -> Any:
            return controller_pb.Empty()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    rpc.add_ProviderServicer_to_server(provider, server)
    controller_rpc.add_GRPCControllerServicer_to_server(Controller(), server)
    sock = f"{folder}/{name}.sock"
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    return server, sock


def serve_reattach(schema_path: Path) -> int:
    """One long-lived provider process that many Terraform runs reattach to
    (``TF_REATTACH_PROVIDERS``, with ``"Test": true`` so Terraform neither starts nor stops it).

    Terraform starts a managed provider several times per command, each a new Python that imports
    gRPC, and Terraform core then converts the whole schema (about 1,600 types) on every start:
    that is most of a stand-in command's time. Here the schema is read once, and the process
    serves *views* of it (``server.view``), each on its own unix socket: a line
    ``view NAME NAME ...`` on standard input (the resource and data source names a configuration
    and its state use; tests/support/terraform.py collects them) is answered with go-plugin's
    handshake line for a server of exactly those real types, ``view *`` with one of the whole
    schema. Plain gRPC (a reattached plugin gets no AutoMTLS). The process ends when its standard
    input closes (its owner exited)."""
    schema = json.loads(schema_path.read_text())
    servers: list[grpc.Server] = []
    with tempfile.TemporaryDirectory(prefix="tfstandin-") as tmp:
        print("ready", flush=True)
        for line in sys.stdin:
            words = line.split()
            if not words or words[0] != "view":
                print("error: expected `view NAME ...` or `view *`", flush=True)
                continue
            shown = schema if words[1:] == ["*"] else view(schema, set(words[1:]))
            server, sock = _listen(Provider(schema_path, shown), tmp, f"view{len(servers)}")
            servers.append(server)
            print(f"1|6|unix|{sock}|grpc|", flush=True)
        for server in servers:
            server.stop(grace=0.2)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--reattach":
        sys.exit(serve_reattach(Path(sys.argv[2])))
    sys.exit(serve(Path(sys.argv[1])))
