"""FakeHubServer against the unmodified huggingface_hub / datasets clients.

huggingface_hub reads HF_ENDPOINT at import time, so every client runs in a subprocess with
HF_ENDPOINT pointing at the server and a fresh HF_HOME; it prints one JSON line the test reads.
"""

import hashlib
import http.client
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lmms_eval_earthsci.testing.hub_server import FakeHubServer, git_blob_oid

REPO = "org/name"
QUESTIONS = ["What is 1+1?", "Name the mineral.", "Which curve rises?"]

README = """---
configs:
- config_name: Math
  data_files:
  - split: test
    path: Math/test-*.parquet
---
# A tiny dataset served by FakeHubServer
"""

# Run before every client's code: helpers to report results and errors as JSON.
PRELUDE = r'''
import hashlib, json, os, sys, time
from pathlib import Path
REPO = "org/name"
SHA = os.environ["SHA"]

def attempt(fn):
    """{"ok": fn()} or a description of the exception it raised."""
    try:
        return {"ok": fn()}
    except Exception as e:
        resp = getattr(e, "response", None)
        cause = e.__cause__
        return {
            "error": type(e).__name__,
            "mro": [c.__name__ for c in type(e).__mro__],
            "status": getattr(resp, "status_code", None),
            "message": str(e),
            "cause": type(cause).__name__ if cause is not None else None,
            "cause_mro": [c.__name__ for c in type(cause).__mro__] if cause is not None else [],
            "cause_message": str(cause) if cause is not None else None,
        }
'''


def png_bytes(seed: int) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (24, 16), (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.rectangle((seed % 12, 3, seed % 12 + 8, 12), fill=(40 * seed % 256, 90, 200))
    d.line((0, 15, 23, seed % 16), fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def repo_dir(tmp_path_factory):
    """A dataset repo laid out like the Hub: README with a `configs:` YAML header, one parquet
    shard with a string column and an Image column, and a loose figure."""
    import datasets

    root = tmp_path_factory.mktemp("repo")
    (root / "README.md").write_text(README)
    (root / "Math").mkdir()
    features = datasets.Features({"question": datasets.Value("string"), "image": datasets.Image()})
    rows = {"question": QUESTIONS, "image": [{"bytes": png_bytes(i), "path": f"img{i}.png"} for i in range(len(QUESTIONS))]}
    datasets.Dataset.from_dict(rows, features=features).to_parquet(str(root / "Math" / "test-00000-of-00001.parquet"))
    (root / "figures").mkdir()
    (root / "figures" / "a.png").write_bytes(png_bytes(7))
    return root


@pytest.fixture
def hub(repo_dir):
    with FakeHubServer({REPO: str(repo_dir)}) as srv:
        yield srv
    assert srv.errors == [], "\n".join(srv.errors)


def run_client(hub, code, home, *, token=None, timeout=120):
    """Run ``code`` (after PRELUDE) in a fresh interpreter pointed at ``hub``; return the JSON it
    printed last."""
    env = hub.client_env(hf_home=home, token=token)
    env["SHA"] = hub.sha(REPO)
    p = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert p.returncode == 0, f"client failed:\n{p.stdout}\n{p.stderr}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def statuses(hub, file):
    return [(r.method, r.status) for r in hub.requests_for(endpoint="resolve", file=file)]


# ---------------------------------------------------------------------------------------- datasets


def test_load_dataset_at_pinned_sha(hub, tmp_path):
    out = run_client(
        hub,
        """
        import datasets
        ds = datasets.load_dataset(REPO, "Math", revision=SHA, split="test")
        raw = ds.cast_column("image", datasets.Image(decode=False))
        rows = [{"question": r["question"], "image_sha256": hashlib.sha256(r["image"]["bytes"]).hexdigest()} for r in raw]
        size = list(ds[0]["image"].size)
        bad = attempt(lambda: datasets.load_dataset(REPO, "Math", revision="v9", split="test").num_rows)
        print(json.dumps({"rows": rows, "size": size, "features": str(ds.features), "bad_revision": bad}))
        """,
        tmp_path / "hf_home",
    )
    assert out["rows"] == [{"question": q, "image_sha256": hashlib.sha256(png_bytes(i)).hexdigest()} for i, q in enumerate(QUESTIONS)]
    assert out["size"] == [24, 16] and "Image(" in out["features"]
    # the pinned sha is what was asked for, never "main"
    revisions = hub.revisions_requested(REPO)
    assert hub.sha(REPO) in revisions and "main" not in revisions
    assert hub.downloaded_files().count((REPO, hub.sha(REPO), "Math/test-00000-of-00001.parquet")) == 1
    # an unknown revision: datasets wraps huggingface_hub's RevisionNotFoundError
    bad = out["bad_revision"]
    assert bad["error"] == "DatasetNotFoundError" and "RevisionNotFoundError" in bad["cause_mro"], bad
    assert [r.status for r in hub.requests if r.revision == "v9"] == [404]


# ------------------------------------------------------------------------------ huggingface_hub


DOWNLOADS = """
from huggingface_hub import hf_hub_download, snapshot_download
snap = snapshot_download(REPO, repo_type="dataset", revision=SHA, allow_patterns=["figures/*"])
files = sorted(os.path.relpath(os.path.join(d, f), snap) for d, _, fs in os.walk(snap) for f in fs)
readme = hf_hub_download(REPO, "README.md", repo_type="dataset", revision=SHA)
fig = hf_hub_download(REPO, "figures/a.png", repo_type="dataset", revision=SHA)
WITH_MAIN = False
extra = hf_hub_download(REPO, "figures/a.png", repo_type="dataset", revision="main") if WITH_MAIN else None
print(json.dumps({"readme": readme, "fig": fig, "snap": snap, "files": files, "main": extra}))
"""


def test_hf_hub_download_and_snapshot_then_warm_cache(hub, repo_dir, tmp_path):
    home = tmp_path / "hf_home"
    out = run_client(hub, DOWNLOADS, home)
    assert Path(out["readme"]).read_bytes() == (repo_dir / "README.md").read_bytes()
    assert Path(out["fig"]).read_bytes() == (repo_dir / "figures" / "a.png").read_bytes()
    assert out["files"] == ["figures/a.png"]  # allow_patterns honoured
    assert Path(os.path.join(out["snap"], "figures", "a.png")).read_bytes() == (repo_dir / "figures" / "a.png").read_bytes()
    assert out["snap"].endswith(hub.sha(REPO))
    first = hub.downloaded_files()
    assert sorted(first) == [(REPO, hub.sha(REPO), "README.md"), (REPO, hub.sha(REPO), "figures/a.png")]

    # warm cache, same HF_HOME: a pinned sha needs no request at all (not even HEAD or /tree);
    # revision "main" makes one HEAD to learn the commit, and still no GET of the content
    hub.clear_requests()
    code = DOWNLOADS.replace("WITH_MAIN = False", "WITH_MAIN = True")
    out2 = run_client(hub, code, home)
    assert out2["fig"] == out["fig"] and out2["snap"] == out["snap"]
    assert Path(out2["main"]).read_bytes() == (repo_dir / "figures" / "a.png").read_bytes()
    assert hub.downloaded_files() == []
    assert [(r.method, r.revision, r.file) for r in hub.requests] == [("HEAD", "main", "figures/a.png")]


def test_unknown_revision_file_and_repo(hub, tmp_path):
    hub.add_fault("figures/a.png", "404")
    out = run_client(
        hub,
        """
        from huggingface_hub import HfApi, hf_hub_download, snapshot_download
        dl = lambda repo=REPO, f="README.md", rev=SHA: hf_hub_download(repo, f, repo_type="dataset", revision=rev)
        print(json.dumps({
            "branch": attempt(lambda: dl(rev="v2")),
            "sha": attempt(lambda: dl(rev="0" * 40)),
            "snapshot": attempt(lambda: snapshot_download(REPO, repo_type="dataset", revision="v2")),
            "snapshot_sha": attempt(lambda: snapshot_download(REPO, repo_type="dataset", revision="1" * 40)),
            "info": attempt(lambda: HfApi().dataset_info(REPO, revision="v2").sha),
            "file": attempt(lambda: dl(f="nope.txt")),
            "fault404": attempt(lambda: dl(f="figures/a.png")),
            "repo": attempt(lambda: dl(repo="org/missing")),
            "model": attempt(lambda: hf_hub_download(REPO, "README.md")),
        }))
        """,
        tmp_path / "hf_home",
    )
    for key in ("branch", "sha", "snapshot", "snapshot_sha", "info"):
        assert out[key].get("error") == "RevisionNotFoundError", (key, out[key])
    for key in ("file", "fault404"):
        assert "EntryNotFoundError" in out[key]["mro"] and out[key]["status"] == 404, (key, out[key])
    for key in ("repo", "model"):  # only dataset repos are served
        assert out[key].get("error") == "RepositoryNotFoundError", (key, out[key])
    assert {"v2", "0" * 40, "1" * 40} <= hub.revisions_requested(REPO)


def test_tree_pagination_paths_info_and_repo_info(repo_dir, tmp_path):
    with FakeHubServer({REPO: (str(repo_dir), "ab" * 20)}, page_size=2) as hub:
        out = run_client(
            hub,
            """
            from huggingface_hub import HfApi, HfFileSystem
            api = HfApi()
            tree = sorted((type(e).__name__, e.path) for e in api.list_repo_tree(REPO, repo_type="dataset", recursive=True, revision=SHA))
            info = api.get_paths_info(REPO, ["README.md", "figures", "missing.txt"], repo_type="dataset", revision=SHA)
            ds_info = api.dataset_info(REPO, files_metadata=True)
            fs = HfFileSystem()
            globbed = fs.glob(f"datasets/{REPO}@{SHA}/Math/*.parquet")
            with fs.open(f"datasets/{REPO}@{SHA}/figures/a.png", "rb", block_size=16) as f:
                f.seek(8)
                chunk = f.read(8)
            print(json.dumps({
                "tree": tree,
                "paths_info": sorted((type(e).__name__, e.path) for e in info),
                "sha": ds_info.sha,
                "siblings": {s.rfilename: [s.size, s.blob_id, bool(s.lfs)] for s in ds_info.siblings},
                "glob": globbed,
                "chunk": chunk.hex(),
            }))
            """,
            tmp_path / "hf_home",
        )
        assert hub.errors == []
    assert out["tree"] == [
        ["RepoFile", "Math/test-00000-of-00001.parquet"],
        ["RepoFile", "README.md"],
        ["RepoFile", "figures/a.png"],
        ["RepoFolder", "Math"],
        ["RepoFolder", "figures"],
    ]
    assert len([r for r in hub.requests if r.endpoint == "tree" and "cursor=" in r.query]) >= 2  # Link pagination followed
    assert out["paths_info"] == [["RepoFile", "README.md"], ["RepoFolder", "figures"]]
    assert out["sha"] == "ab" * 20
    readme = (repo_dir / "README.md").read_bytes()
    assert out["siblings"]["README.md"] == [len(readme), git_blob_oid(readme), False]
    assert out["siblings"]["figures/a.png"][2] is True  # binary: reported as LFS
    assert out["glob"] == [f"datasets/{REPO}@{'ab' * 20}/Math/test-00000-of-00001.parquet"]
    assert bytes.fromhex(out["chunk"]) == (repo_dir / "figures" / "a.png").read_bytes()[8:16]
    assert any(r.range for r in hub.requests_for(endpoint="resolve", method="GET"))  # HfFileSystem reads ranges


def test_raw_http_headers_ranges_and_keep_alive(hub, repo_dir):
    data = (repo_dir / "figures" / "a.png").read_bytes()
    sha = hub.sha(REPO)
    conn = http.client.HTTPConnection("127.0.0.1", hub.port, timeout=10)
    url = f"/datasets/{REPO}/resolve/main/figures/a.png"
    try:  # all on one keep-alive connection
        conn.request("HEAD", url)
        r = conn.getresponse()
        r.read()
        assert r.status == 200 and r.getheader("X-Repo-Commit") == sha
        assert r.getheader("ETag") == f'"{git_blob_oid(data)}"'
        assert r.getheader("X-Linked-Etag") == f'"{hashlib.sha256(data).hexdigest()}"'
        assert r.getheader("X-Linked-Size") == r.getheader("Content-Length") == str(len(data))
        assert not [k for k, _ in r.getheaders() if k.lower().startswith("x-xet") or k.lower() == "link"]
        for rng, status, body, content_range in [
            ("bytes=2-5", 206, data[2:6], f"bytes 2-5/{len(data)}"),
            ("bytes=10-", 206, data[10:], f"bytes 10-{len(data) - 1}/{len(data)}"),
            ("bytes=-4", 206, data[-4:], f"bytes {len(data) - 4}-{len(data) - 1}/{len(data)}"),
            (f"bytes={len(data)}-", 416, None, f"bytes */{len(data)}"),
        ]:
            conn.request("GET", url, headers={"Range": rng})
            r = conn.getresponse()
            got = r.read()
            assert (r.status, r.getheader("Content-Range")) == (status, content_range), rng
            if body is not None:
                assert got == body
        conn.request("GET", f"/datasets/{REPO}/resolve/v3/figures/a.png")
        r = conn.getresponse()
        r.read()
        assert (r.status, r.getheader("X-Error-Code")) == (404, "RevisionNotFound")
        conn.request("GET", "/api/datasets/org/missing/revision/main")
        r = conn.getresponse()
        r.read()
        assert (r.status, r.getheader("X-Error-Code")) == (404, "RepoNotFound")
    finally:
        conn.close()
    assert [r.range for r in hub.requests_for(endpoint="resolve", method="GET")][:4] == ["bytes=2-5", "bytes=10-", "bytes=-4", f"bytes={len(data)}-"]


# ---------------------------------------------------------------------------------------- faults


DOWNLOAD_FIG = """
t0 = time.time()
res = attempt(lambda: Path(hf_hub_download(REPO, "figures/a.png", repo_type="dataset", revision=SHA)).read_bytes().hex())
res["elapsed"] = time.time() - t0
"""


def fig_client(extra=""):
    return "from huggingface_hub import hf_hub_download\n" + extra + DOWNLOAD_FIG + "print(json.dumps(res))\n"


def test_fault_500_once_is_retried(hub, repo_dir, tmp_path):
    fault = hub.add_fault("figures/a.png", "500", times=1)
    out = run_client(hub, fig_client(), tmp_path / "hf_home")
    assert bytes.fromhex(out["ok"]) == (repo_dir / "figures" / "a.png").read_bytes()
    # the failed HEAD is retried at once (no backoff sleep on that first retry)
    assert statuses(hub, "figures/a.png") == [("HEAD", 500), ("HEAD", 200), ("GET", 200)]
    assert fault.hits == 1 and out["elapsed"] < 1.0


def test_fault_500_on_get_is_not_retried(hub, tmp_path):
    hub.add_fault("figures/a.png", "500", methods="GET")
    out = run_client(hub, fig_client(), tmp_path / "hf_home")
    # http_get retries only 408/429: one GET, a HfHubHTTPError naming the URL
    assert out["error"] == "HfHubHTTPError" and out["status"] == 500, out
    assert f"{hub.base_url}/datasets/{REPO}/resolve/{hub.sha(REPO)}/figures/a.png" in out["message"]
    assert statuses(hub, "figures/a.png") == [("HEAD", 200), ("GET", 500)]


def test_fault_always_500_exhausts_the_backoff(hub, tmp_path):
    hub.add_fault("figures/a.png", "500")
    # the backoff sleeps 1+2+4+8+8 s: record the sleeps instead of waiting (huggingface_hub's own
    # module is not changed, only its `time` reference, in the client process)
    no_sleep = """
import time as _time, huggingface_hub.utils._http as _http
SLEEPS = []
class _Clock:
    def __getattr__(self, name): return getattr(_time, name)
    def sleep(self, s): SLEEPS.append(s)
_http.time = _Clock()
"""
    out = run_client(hub, fig_client(no_sleep).replace("print(json.dumps(res))", "res['sleeps'] = SLEEPS; print(json.dumps(res))"), tmp_path / "hf_home")
    assert out["error"] == "LocalEntryNotFoundError" and out["cause"] == "HfHubHTTPError", out
    assert f"/datasets/{REPO}/resolve/{hub.sha(REPO)}/figures/a.png" in out["cause_message"]
    assert out["sleeps"] == [1, 2, 4, 8, 8]
    assert statuses(hub, "figures/a.png") == [("HEAD", 500)] * 7  # 1 quick try + 1 + 5 retries


def test_fault_drop(hub, repo_dir, tmp_path):
    hub.add_fault("README.md", "drop")  # every request for it
    hub.add_fault("figures/a.png", "drop", times=1, methods="GET")
    out = run_client(
        hub,
        fig_client().replace(
            "print(json.dumps(res))",
            "res['readme'] = attempt(lambda: hf_hub_download(REPO, 'README.md', repo_type='dataset', revision=SHA)); print(json.dumps(res))",
        ),
        tmp_path / "hf_home",
    )
    # a dropped GET is resumed (after a 1 s pause) and the download succeeds
    assert bytes.fromhex(out["ok"]) == (repo_dir / "figures" / "a.png").read_bytes()
    assert statuses(hub, "figures/a.png") == [("HEAD", 200), ("GET", None), ("GET", 200)]
    # a dropped HEAD is not retried: httpx's RemoteProtocolError comes straight out of hf_hub_download
    assert out["readme"]["error"] == "RemoteProtocolError", out["readme"]
    assert statuses(hub, "README.md") == [("HEAD", None)]


def test_fault_slow(hub, repo_dir, tmp_path):
    fault = hub.add_fault("figures/a.png", "slow", delay=0.4)
    out = run_client(hub, fig_client(), tmp_path / "hf_home")
    assert bytes.fromhex(out["ok"]) == (repo_dir / "figures" / "a.png").read_bytes()
    assert fault.hits == 2 and out["elapsed"] >= 0.8  # HEAD and GET both delayed
    assert statuses(hub, "figures/a.png") == [("HEAD", 200), ("GET", 200)]


# ----------------------------------------------------------------------------------------- token


def test_token_required(repo_dir, tmp_path):
    code = """
    from huggingface_hub import hf_hub_download, snapshot_download
    res = {
        "file": attempt(lambda: Path(hf_hub_download(REPO, "figures/a.png", repo_type="dataset", revision=SHA)).read_bytes().hex()),
        "snapshot": attempt(lambda: sorted(os.listdir(snapshot_download(REPO, repo_type="dataset", allow_patterns=["figures/*"])))),
    }
    WITH_DATASETS = False
    if WITH_DATASETS:
        import datasets
        res["rows"] = attempt(lambda: list(datasets.load_dataset(REPO, "Math", revision=SHA, split="test")["question"]))
    print(json.dumps(res))
    """
    with FakeHubServer({REPO: str(repo_dir)}, token="secret") as hub:
        ok = run_client(hub, code.replace("WITH_DATASETS = False", "WITH_DATASETS = True"), tmp_path / "a", token="secret")
        assert bytes.fromhex(ok["file"]["ok"]) == (repo_dir / "figures" / "a.png").read_bytes()
        assert ok["snapshot"]["ok"] == ["figures"] and ok["rows"]["ok"] == QUESTIONS
        assert hub.requests and all(r.authorization and r.status != 401 for r in hub.requests)

        for token, home in ((None, "b"), ("wrong", "c")):
            hub.clear_requests()
            out = run_client(hub, code, tmp_path / home, token=token)
            for key in ("file", "snapshot"):
                assert out[key]["error"] == "HfHubHTTPError" and out[key]["status"] == 401, (token, key, out[key])
            assert {r.status for r in hub.requests} == {401}
            assert all(r.authorization == (token is not None) for r in hub.requests)
        assert "secret" not in repr(hub.requests) and "wrong" not in repr(hub.requests)
        assert hub.errors == []
