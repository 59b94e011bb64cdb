"""A folder served over HTTP on a free localhost port: the website for test_site, and the book's
website standing in for the published one for test_ways_in (a notebook alone installs from it)."""
import contextlib
import functools
import http.server
import threading


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    max_age = None  # seconds a browser may reuse a file without asking again; None: no Cache-Control header

    def log_message(self, *args):
        pass

    def end_headers(self):
        if self.max_age is not None:
            self.send_header("Cache-Control", f"max-age={self.max_age}")
        super().end_headers()


@contextlib.contextmanager
def serve(folder, max_age=None):
    """Serve `folder` while the block runs: its base URL, http://127.0.0.1:PORT. `max_age` sends
    Cache-Control: max-age as a static host does (GitHub Pages: 600 s); without it a browser reuses a
    file only heuristically, a short while after a build has just written it."""
    handler = functools.partial(type("Handler", (QuietHandler,), {"max_age": max_age}), directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
