"""The other end of tests/quic_quinn.rs's aioquic cases: an independent QUIC stack.

aioquic (pure Python QUIC: its own key schedule, packet and header protection, the AES
in them from OpenSSL through pyca/cryptography) as an echo server or as a client
that checks the echo, with one TLS 1.3 suite forced and, on request, a key update of
its own. One connection, then it prints a summary line and exits; any failure exits
non-zero with the reason on stderr.

    aioquic_peer.py server --suite aes128|aes256 --cert PEM --key PEM [--key-update-after N]
        prints "PORT <udp port>", echoes every bidirectional stream, and after the
        connection closes prints "DONE echoed <bytes> key_update <0|1>"
    aioquic_peer.py client --suite ... --cafile PEM --port N --sizes A,B,.. [--key-update]
        one stream per size (random data, the echo compared byte for byte; a key update
        requested after the first with --key-update), then "DONE sent <bytes>"
"""

import argparse
import asyncio
import os
import sys

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamDataReceived
from aioquic.tls import CipherSuite

ALPN = "aes-gcm-vaes-test"
SUITES = {
    "aes128": CipherSuite.AES_128_GCM_SHA256,
    "aes256": CipherSuite.AES_256_GCM_SHA384,
}
TIMEOUT = 60


def configuration(args, is_client):
    return QuicConfiguration(
        is_client=is_client,
        alpn_protocols=[ALPN],
        cipher_suites=[SUITES[args.suite]],
        server_name="localhost" if is_client else None,
        idle_timeout=TIMEOUT,
    )


async def run_server(args):
    config = configuration(args, is_client=False)
    config.load_cert_chain(args.cert, args.key)
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    echoed = 0
    updated = False

    class Echo(QuicConnectionProtocol):
        def quic_event_received(self, event):
            nonlocal echoed, updated
            if isinstance(event, StreamDataReceived):
                self._quic.send_stream_data(
                    event.stream_id, event.data, end_stream=event.end_stream
                )
                echoed += len(event.data)
                if args.key_update_after and not updated and echoed >= args.key_update_after:
                    self.request_key_update()
                    updated = True
                self.transmit()
            elif isinstance(event, ConnectionTerminated) and not done.done():
                done.set_result(event)

    server = await serve(
        "127.0.0.1", 0, configuration=config, create_protocol=Echo
    )
    port = server._transport.get_extra_info("sockname")[1]
    print(f"PORT {port}", flush=True)
    event = await asyncio.wait_for(done, TIMEOUT)
    server.close()
    if event.error_code != 0:
        sys.exit(f"connection closed with error {event.error_code}: {event.reason_phrase}")
    print(f"DONE echoed {echoed} key_update {int(updated)}", flush=True)


async def run_client(args):
    config = configuration(args, is_client=True)
    config.load_verify_locations(args.cafile)
    sent = 0
    async with connect("127.0.0.1", args.port, configuration=config) as client:
        for i, size in enumerate(int(s) for s in args.sizes.split(",")):
            data = os.urandom(size)
            reader, writer = await client.create_stream()
            writer.write(data)
            writer.write_eof()
            got = await reader.read()
            if got != data:
                sys.exit(f"stream {i}: {len(got)} bytes echoed for {size}, or they differ")
            sent += size
            if args.key_update and i == 0:
                client.request_key_update()
        client.close()
        await client.wait_closed()
    print(f"DONE sent {sent}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["server", "client"])
    p.add_argument("--suite", choices=SUITES, required=True)
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--key-update-after", type=int, default=0)
    p.add_argument("--cafile")
    p.add_argument("--port", type=int)
    p.add_argument("--sizes", default="1,1200,100000")
    p.add_argument("--key-update", action="store_true")
    args = p.parse_args()
    run = run_server if args.role == "server" else run_client
    asyncio.run(asyncio.wait_for(run(args), 2 * TIMEOUT))


if __name__ == "__main__":
    main()
