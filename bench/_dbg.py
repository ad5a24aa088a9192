import tempfile
from pathlib import Path
from bench.tracing_overhead import respond, daemon, per_event
from bench.common import FakeModelServer
with FakeModelServer() as model, tempfile.TemporaryDirectory() as tmp:
    model.responder = respond
    for k in range(3):
        with daemon(Path(tmp), f"d{k}", model, []) as p:
            print(per_event(p, model, 150)[0], flush=True)
