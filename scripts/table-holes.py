#!/usr/bin/env python3
"""The attacks of issue 34's hostile holes, made from outside against a `flatland serve` binary.

    scripts/table-holes.py PATH/TO/flatland [--postgres URL]

Starts the binary on a free loopback port for each attack (SQLite in a temporary file, or a fresh
schema of the PostgreSQL database given), makes the attack, prints one line per finding, and stops
it. Options the binary does not list in `serve --help` (an older build) are left out, so the same
script gives the figures before and after the fixes. Hole 5 (SQL in errors) is not here.
"""
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

BINARY = sys.argv[1]
POSTGRES = sys.argv[sys.argv.index("--postgres") + 1] if "--postgres" in sys.argv else None
HELP = subprocess.run([BINARY, "serve", "--help"], capture_output=True, text=True).stdout


def supported(option):
    return option in HELP


class Server:
    def __init__(self, *options, storage="sqlite"):
        self.dir = tempfile.mkdtemp(prefix="holes-")
        self.db = os.path.join(self.dir, "tables.sqlite")
        args = [BINARY, "serve", "--port", "0", "--users", "1", "--table-protocols", "v1,v2,v3"]
        if storage == "postgres":
            schema = "h_" + uuid.uuid4().hex[:12]
            args += ["--tables-db", POSTGRES + ("&" if "?" in POSTGRES else "?") + "schema=" + schema]
        else:
            args += ["--tables-db", self.db]
        i = 0
        while i < len(options):
            name = options[i]
            value = options[i + 1] if i + 1 < len(options) and not options[i + 1].startswith("--") else None
            if supported(name):
                args += [name] + ([value] if value is not None else [])
            i += 2 if value is not None else 1
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            raise RuntimeError("no start line: " + line + self.process.stderr.read())
        self.port = int(match.group(1))

    def stop(self):
        self.process.terminate()
        self.process.wait()

    def request(self, method, path, body=None, headers=None, version="2.0.0"):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        all_headers = {"ZUMO-API-VERSION": version} if version else {}
        if body is not None:
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        connection.request(method, path, body=body, headers=all_headers)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data

    def connect(self, receive_buffer=None):
        s = socket.socket()
        if receive_buffer:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        s.connect(("127.0.0.1", self.port))
        return s


def report(hole, storage, text):
    print(f"hole {hole:>2} [{storage}]: {text}", flush=True)


def hole1(storage):
    server = Server("--body-timeout", "3", "--idle-timeout", "60", storage=storage)
    try:
        s = server.connect()
        s.sendall(b"POST /tables/todoitem HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
        start = time.time()
        lived = None
        s.settimeout(0.05)
        while time.time() - start < 20:
            time.sleep(1)
            try:
                if s.recv(1) == b"":
                    lived = time.time() - start
                    break
            except socket.timeout:
                pass
            except OSError:
                lived = time.time() - start
                break
            try:
                s.send(b" ")
            except OSError:
                lived = time.time() - start
                break
        s.close()
        if lived is None:
            report(1, storage, "a body trickled at 1 byte/s (idle timeout 60 s): connection still open after 20 s")
        else:
            report(1, storage, f"a body trickled at 1 byte/s (idle timeout 60 s): closed by the server after {lived:.1f} s")
    finally:
        server.stop()


def hole2(storage):
    server = Server(storage=storage)
    try:
        status, _, _ = server.request("POST", "/tables/todoitem", '{"id":"n","text":"\\u0000"}')
        statuses = [status]
        for query in ["$filter=text%20eq%20'a'", "$orderby=text", "$filter=text%20eq%20'a%00b'"]:
            statuses.append(server.request("GET", "/tables/todoitem?" + query)[0])
        report(2, storage, "POST text \\u0000: %d; then $filter=text eq 'a': %d; $orderby=text: %d; "
               "$filter=text eq 'a%%00b': %d" % tuple(statuses))
    finally:
        server.stop()


def size(server):
    return sum(os.path.getsize(os.path.join(server.dir, f)) for f in os.listdir(server.dir))


def hole3(storage):
    server = Server(storage=storage)
    try:
        text = "y" * 100_000
        server.request("POST", "/tables/todoitem", json.dumps({"id": "a", "text": text}))
        before = size(server)
        for i in range(300):
            server.request("PATCH", "/tables/todoitem/a", json.dumps({"text": text, "n": i}),
                           {"Idempotency-Key": f"k{i}"})
        server.stop()
        grown = size(server) - before
        report(3, storage, f"300 keyed PATCHes of a 100 KB row: the SQLite files grew by {grown / 1e6:.1f} MB")
    finally:
        if server.process.poll() is None:
            server.stop()


def fill(server, rows, row_bytes):
    text = "z" * row_bytes
    for start in range(0, rows, 100):
        operations = [{"method": "POST", "table": "todoitem", "body": {"id": "r%05d" % i, "text": text}}
                      for i in range(start, min(rows, start + 100))]
        status, _, _ = server.request("POST", "/tables/$batch", json.dumps({"operations": operations}))
        assert status == 200, status


def read_response(s, rate=None, wait=0):
    time.sleep(wait)
    data = b""
    start = time.time()
    s.settimeout(30)
    while True:
        try:
            chunk = s.recv(16 << 10)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
        if rate:
            due = len(data) / rate - (time.time() - start)
            if due > 0:
                time.sleep(due)
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?i)content-length: *(\d+)", head)
    return len(body), int(length.group(1)) if length else None


def hole4(storage):
    server = Server("--idle-timeout", "2", "--write-timeout", "3", "--tables-page-size", "1000", storage=storage)
    try:
        fill(server, 1000, 8000)
        request = b"GET /tables/todoitem?$top=1000 HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\nConnection: close\r\n\r\n"
        s = server.connect(receive_buffer=32 << 10)
        s.sendall(request)
        got, length = read_response(s, rate=1_000_000)
        s.close()
        report(4, storage, f"an 8 MB listing read at 1 MB/s (idle timeout 2 s): got {got / 1e6:.1f} MB of {length / 1e6:.1f} MB")
    finally:
        server.stop()
    server = Server("--idle-timeout", "60", "--write-timeout", "3", "--tables-page-size", "1000", storage=storage)
    try:
        fill(server, 1000, 8000)
        s = server.connect(receive_buffer=16 << 10)
        s.sendall(request.replace(b"Connection: close\r\n", b""))
        time.sleep(10)
        got, length = read_response(s)
        s.close()
        report(4, storage, f"a client that reads nothing for 10 s (idle timeout 60 s), then reads: got {got / 1e6:.1f} MB of "
               f"{length / 1e6:.1f} MB ({'cut' if got < length else 'still held for it'})")
    finally:
        server.stop()


def hole6(storage):
    server = Server(storage=storage)
    try:
        _, headers, _ = server.request("POST", "/tables/todoitem", '{"id":"a"}', {"Host": "evil.example"})
        fill(server, 60, 10)
        _, listed, _ = server.request("GET", "/tables/todoitem", headers={"Host": "evil.example"})
        report(6, storage, f"Host: evil.example gives Location: {headers.get('location')}; Link: {listed.get('link')}")
    finally:
        server.stop()


def hole7(storage):
    server = Server(storage=storage)
    try:
        server.request("POST", "/tables/todoitem", '{"id":"a","createdAt":"1999-01-01T00:00:00Z"}', version="3.0.0")
        _, _, body = server.request("GET", "/tables/todoitem/a")
        status, _, _ = server.request("PUT", "/tables/todoitem/a", body, version="3.0.0")
        report(7, storage, f"v3 insert with createdAt, v2 read: 'createdAt' {body.count(b'createdAt')} times in the row; "
               f"v3 PUT of what was read: {status}")
    finally:
        server.stop()


def hole8(storage):
    server = Server(storage=storage)
    try:
        outcomes = {}
        for round in range(50):
            results = []

            def send():
                status, headers, _ = server.request("POST", "/tables/todoitem", '{"id":"race%d"}' % round,
                                                    {"Idempotency-Key": "key%d" % round})
                results.append(f"{status}{'r' if 'idempotent-replayed' in headers else ''}")

            threads = [threading.Thread(target=send) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            key = "+".join(sorted(results))
            outcomes[key] = outcomes.get(key, 0) + 1
        report(8, storage, "50 keyed inserts sent twice at once: " + ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items()))
               + " (r: Idempotent-Replayed)")
    finally:
        server.stop()


def hole9(storage):
    server = Server(storage=storage)
    try:
        server.request("POST", "/tables/todoitem", '{"id":"keep","text":"x"}')
        batch = '{"operations":[{"method":"DELETE","method":"POST","table":"todoitem","id":"keep","body":{"id":"new"}}]}'
        status, _, _ = server.request("POST", "/tables/$batch", batch)
        created = server.request("GET", "/tables/todoitem/new")[0]
        report(9, storage, f"$batch with \"method\" twice (DELETE, then POST): {status}; the POST's row afterwards: {created}")
    finally:
        server.stop()


def hole10(storage):
    server = Server(storage=storage)
    try:
        server.request("POST", "/tables/todoitem", '{"id":"a","text":"x"}', version="3.0.0")
        status, _, _ = server.request("PUT", "/tables/todoitem/a", '{"id":"a","text":"overwritten"}',
                                      {"If-None-Match": "*"}, version="3.0.0")
        _, _, body = server.request("GET", "/tables/todoitem/a", version="3.0.0")
        report(10, storage, f"PUT with If-None-Match: * on an existing row: {status}; text afterwards: {json.loads(body)['text']}")
    finally:
        server.stop()


storages = ["sqlite"] + (["postgres"] if POSTGRES else [])
print(f"# {BINARY}: serve options: " + " ".join(sorted(set(re.findall(r"--[a-z-]+", HELP)))), flush=True)
hole1("sqlite")
for storage in storages:
    hole2(storage)
hole3("sqlite")
hole4("sqlite")
hole6("sqlite")
for storage in storages:
    hole7(storage)
    hole8(storage)
    hole9(storage)
    hole10(storage)
