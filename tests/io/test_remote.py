"""An input in an object store (io/remote.py): listed as a folder is, fetched file by
file, read as a local file, named by its URL in every message and in the catalog. The
store is a real S3 endpoint on 127.0.0.1 (moto's server), reached through s3fs."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from prudence_cli.cli import main
from prudence_cli.errors import InputError
from prudence_cli.io.remote import Store, fetched, is_url, listed, secret_options

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

SAMPLE = Path(__file__).parents[2] / "sample_data" / "pisa_gps.csv.gz"


CREDENTIALS = {  # the store's credentials come from the environment, as in a deployment
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="module")
def endpoint():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    with pytest.MonkeyPatch.context() as patch:
        for variable, value in CREDENTIALS.items():
            patch.setenv(variable, value)
        yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(endpoint, request):
    """An empty bucket of its own for each test: (name, put(key, bytes))."""
    import boto3

    name = "t-" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:20]
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=name)

    def put(key: str, body: bytes) -> None:
        client.put_object(Bucket=name, Key=key, Body=body)

    return name, put


def _options(endpoint: str) -> tuple[tuple[str, object], ...]:
    return (("endpoint_url", endpoint),)


def _parts() -> dict[str, bytes]:
    """The sample as three parts of three kinds, as an export lays them out."""
    rows = pd.read_csv(SAMPLE, dtype=str)
    third = len(rows) // 3
    parquet = io.BytesIO()
    rows.iloc[third : 2 * third].to_parquet(parquet, index=False)
    last = rows.iloc[2 * third :].to_csv(index=False).encode()
    return {
        "day=1/part-0.csv": rows.iloc[:third].to_csv(index=False).encode(),
        "day=2/part-0.parquet": parquet.getvalue(),
        "day=3/part-0.csv.gz": gzip.compress(last, mtime=0),
    }


def _config(folder: Path, path: str, **input_extra: object) -> Path:
    config = {
        "name": "remote",
        "seed": 7,
        "input": {
            "path": path,
            "format": "gps",
            "columns": {"user": "uid", "time": "datetime", "lat": "lat", "lon": "lng"},
            "timezone": "Europe/Rome",
            **input_extra,
        },
        "select": {"points": "trip_ends", "trips": {"max_gap": "20min"}, "min_trips": 7},
        "dataview": {"format": "presence", "dimensions": {"grid": ["500m"]}},
        "attacks": [{"attack": "presence", "knowledge": {"h": [1, 2], "visits": ["exact"]}}],
        "output": "catalog",
    }
    file = folder / f"{path.replace('/', '_').replace(':', '')[:40]}.yaml"
    file.write_text(yaml.safe_dump(config), encoding="utf-8")
    return file


def test_urls_are_told_from_local_paths():
    assert is_url("s3://bucket/calls/") and is_url("gs://b/x.parquet")
    assert not is_url("file:///data/calls.csv") and not is_url("/data/s3://x")
    assert not is_url("C:\\data\\calls.csv") and not is_url("calls.csv")
    options = {"endpoint_url": "x", "client_kwargs": {"aws_secret_access_key": "s"}, "key": "k"}
    assert secret_options(options) == ["client_kwargs.aws_secret_access_key", "key"]
    assert secret_options({"token": "anon", "anon": True, "sas_token": "?sv=1"}) == ["sas_token"]
    nested = Store("s3://b/x/", (("config_kwargs", {"read_timeout": 3}),))
    assert hash(nested) == hash(Store("s3://b/x/")) and nested != Store("s3://b/x/")


def test_a_prefix_is_listed_as_a_folder_is_read(endpoint, bucket):
    """Every data file under the prefix, in URL order; hidden and bookkeeping objects
    and other files left out; a pattern and a single object too."""
    name, put = bucket
    for key in ["x/b.csv", "x/a/c.parquet", "x/_SUCCESS", "x/.a.csv.crc", "x/_tmp/d.csv"]:
        put(key, b"uid\n1\n")
    put("x/notes.txt", b"hello")
    urls = [f.url for f in listed(Store(f"s3://{name}/x/", _options(endpoint)))]
    assert urls == [f"s3://{name}/x/a/c.parquet", f"s3://{name}/x/b.csv"]
    urls = [f.url for f in listed(Store(f"s3://{name}/x/*.csv", _options(endpoint)))]
    assert urls == [f"s3://{name}/x/b.csv"]
    urls = [f.url for f in listed(Store(f"s3://{name}/x/_tmp/*.csv", _options(endpoint)))]
    assert urls == [f"s3://{name}/x/_tmp/d.csv"]  # the pattern names the bookkeeping
    (one,) = listed(Store(f"s3://{name}/x/notes.txt", _options(endpoint)))
    assert one.size == 5  # an object named alone is read whatever its name


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("s3://{name}/nothing/", "no such object or prefix in the store"),
        ("s3://{name}/x/*.parquet", "matches no object"),
        ("s3://{name}/y/", "is a prefix with no data file under it"),
        ("s3://no-such-bucket-here/x/", "no such object or prefix in the store"),
    ],
)
def test_what_names_no_file_is_said(endpoint, bucket, path, message):
    name, put = bucket
    put("x/a.csv", b"uid\n1\n")
    put("y/readme.txt", b"hello")
    url = path.format(name=name)
    with pytest.raises(InputError, match=message) as caught:
        listed(Store(url, _options(endpoint)))
    assert str(caught.value).startswith(f"{url}: ")


def test_a_store_not_reached_or_without_credentials_is_said(endpoint, bucket, monkeypatch):
    name, _ = bucket
    for variable in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"]:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # fsspec keeps a client per settings
    try:
        with pytest.raises(InputError, match="credentials in the environment"):
            listed(Store(f"s3://{name}/x/", (("endpoint_url", endpoint),)))
    finally:
        s3fs.S3FileSystem.clear_instance_cache()  # nor one without credentials
    closed = (("anon", True), ("endpoint_url", "http://127.0.0.1:9"))
    with pytest.raises(InputError, match="cannot be read from the store .*check the URL"):
        listed(Store(f"s3://{name}/x/", closed))


def test_a_fetched_file_is_hashed_and_removed_whatever_happens(endpoint, bucket, tmp_path):
    name, put = bucket
    put("a.csv", b"uid,t\n1,2\n")
    (file,) = listed(Store(f"s3://{name}/a.csv", _options(endpoint)))
    heard = []
    with fetched(file, tmp_path, lambda done, size: heard.append((done, size))) as copy:
        assert copy.path.read_bytes() == b"uid,t\n1,2\n"
        assert copy.sha256 == hashlib.sha256(b"uid,t\n1,2\n").hexdigest() and copy.size == 10
    assert heard[-1] == (10, 10) and list(tmp_path.iterdir()) == []
    with pytest.raises(InputError) as caught, fetched(file, tmp_path) as copy:
        raise InputError(copy.path, "holds a bad row", line=2)
    assert str(caught.value) == f"s3://{name}/a.csv:2: holds a bad row"  # named by its URL
    assert list(tmp_path.iterdir()) == []
    long = "day=2011-06-01." + "x" * 300 + ".csv.gz"  # longer than a local name may be
    put(long, b"gz")
    (file,) = listed(Store(f"s3://{name}/{long}", _options(endpoint)))
    with fetched(file, tmp_path) as copy:
        assert copy.path.name.endswith(".csv.gz") and copy.path.read_bytes() == b"gz"


def test_an_assessment_of_a_store_equals_that_of_the_same_files_on_disk(endpoint, bucket, tmp_path):
    """`prudence assess` on the parts in a store and on the same parts on disk: the same
    catalog, but for its manifest, which names each part by URL with its sha256."""
    name, put = bucket
    local = tmp_path / "parts"
    parts = _parts()
    for key, body in parts.items():
        put(f"calls/{key}", body)
        (local / key).parent.mkdir(parents=True, exist_ok=True)
        (local / key).write_bytes(body)
    put("calls/_SUCCESS", b"")
    options = {"endpoint_url": endpoint}
    remote = _config(tmp_path, f"s3://{name}/calls/", storage_options=options)
    on_disk = _config(tmp_path, str(local))
    runner = CliRunner()
    for config, out in [(remote, "remote"), (on_disk, "disk")]:
        result = runner.invoke(main, ["assess", str(config), "--out", str(tmp_path / out), "-q"])
        assert result.exit_code == 0, result.output
    from tests.engine.test_distributed import _same_catalog

    _same_catalog(tmp_path / "disk", tmp_path / "remote")
    manifest = json.loads((tmp_path / "remote" / "catalog.json").read_text())
    inputs = {entry["path"]: entry for entry in manifest["inputs"]}
    for key, body in parts.items():
        entry = inputs[f"s3://{name}/calls/{key}"]
        assert entry["sha256"] == hashlib.sha256(body).hexdigest()
        assert entry["bytes"] == len(body)
    assert manifest["config"]["input"]["storage_options"] == options
    assert not list(tmp_path.glob("prudence-fetch-*"))


def test_a_bad_row_in_a_store_is_named_by_its_url_and_line(endpoint, bucket, tmp_path):
    name, put = bucket
    rows = pd.read_csv(SAMPLE, dtype=str, nrows=50)
    rows.loc[6, "datetime"] = "soon"
    put("calls/a.csv", rows.to_csv(index=False).encode())
    config = _config(tmp_path, f"s3://{name}/calls/", storage_options=_options_map(endpoint))
    result = CliRunner().invoke(main, ["assess", str(config), "--out", str(tmp_path / "c")])
    assert result.exit_code == 2
    assert f"s3://{name}/calls/a.csv:8: " in result.output and "soon" in result.output
    assert not (tmp_path / "c").exists()


def _options_map(endpoint: str) -> dict[str, object]:
    return dict(_options(endpoint))


def test_validate_lists_the_store_and_checks_each_header(endpoint, bucket, tmp_path):
    name, put = bucket
    for key, body in _parts().items():
        put(f"calls/{key}", body)
    timeouts = {"connect_timeout": 5, "read_timeout": 30, "retries": {"max_attempts": 2}}
    options = {**_options_map(endpoint), "config_kwargs": timeouts}  # as docs/config.md
    config = _config(tmp_path, f"s3://{name}/calls/", storage_options=options)
    result = CliRunner().invoke(main, ["validate", str(config), "--format", "json"])
    assert result.exit_code == 0, result.output
    (checked,) = json.loads(result.stdout)["files"]
    assert checked["path"] == f"s3://{name}/calls/"
    assert checked["found"].startswith("3 files (2 CSV, 1 Parquet")
    put("calls/day=4/part-0.csv", b"user,when\n1,2\n")
    result = CliRunner().invoke(main, ["validate", str(config)])
    assert result.exit_code == 2
    assert f"s3://{name}/calls/day=4/part-0.csv: no column 'uid'" in result.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"storage_options": {"secret": "s"}},
            "input.storage_options.secret: credentials do not belong in a config",
        ),
        ({"cache": "parquet"}, "input.cache: parquet keeps the points of local files only"),
        ({"path": "gs://b/calls/"}, "input.path: reading gs:// needs a package not installed"),
        ({"path": "nope://b/calls/"}, "input.path: nope:// is not a protocol fsspec knows"),
        ({"path": "s3://"}, "input.path: 's3://' names no bucket"),
        ({"path": "s3:///calls/"}, "input.path: 's3:///calls/' names no bucket"),
        ({"path": "simplecache::s3://b/calls/"}, "chained fsspec URLs (simplecache::...)"),
        (
            {"path": "https://alice:hunter2@example.org/calls.csv"},
            "input.path: the URL holds a password (user:password@)",
        ),
        (
            {"path": "https://example.org/c.csv?X-Amz-Credential=A&X-Amz-Signature=0f"},
            "the URL holds the signature of a signed URL (X-Amz-Credential, X-Amz-Signature)",
        ),
        (
            {"storage_options": {"endpoint_url": "http://AKIA:secret@minio:9000"}},
            "input.storage_options.endpoint_url: credentials do not belong in a config",
        ),
        ({"path": "calls.csv", "storage_options": {}}, "input.storage_options: only an"),
        ({"towers": "s3://b/towers.csv", "format": "cdr"}, "input.towers: 's3://b/towers.csv'"),
    ],
)
def test_what_a_config_cannot_ask_of_a_store_is_said(tmp_path, extra, message):
    pytest.importorskip("s3fs")
    if "gs://" in str(extra.get("path")):
        try:
            import gcsfs  # noqa: F401
        except ImportError:
            pass
        else:
            pytest.skip("gcsfs is installed here")
    path = str(extra.pop("path", "s3://b/calls/"))
    config = _config(tmp_path, path, **extra)
    result = CliRunner().invoke(main, ["validate", str(config)])
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.fixture(scope="module")
def cluster(endpoint):
    """Dask workers started with the store's credentials in their environment."""
    pytest.importorskip("distributed")
    from prudence_cli.engine.runner import DaskRunner

    runner = DaskRunner(workers=2)
    yield runner
    runner.close()


@pytest.mark.parametrize("points_stay", [True, False])
def test_workers_fetch_their_parts_as_a_local_run_reads_them(
    endpoint, bucket, cluster, tmp_path, points_stay, monkeypatch, caplog
):
    """Each worker fetches the parts it reads, each once (a CSV part fetched for its
    glimpse is read where it was fetched): the catalog of a local run, the same digests
    in the manifest, and nothing left on the workers' disks. A bad row read there is
    named by its URL and line."""
    from prudence_cli import cluster_views
    from prudence_cli.assess import run_assessment
    from prudence_cli.config import load_config
    from tests.engine.test_distributed import _engine, _pieces_left, _same_catalog

    if not points_stay:  # the points gathered in the assessing process
        monkeypatch.setattr(cluster_views, "views_on_workers", lambda config: False)
    name, put = bucket
    for key, body in _parts().items():
        put(f"calls/{key}", body)
    file = _config(tmp_path, f"s3://{name}/calls/", storage_options=_options_map(endpoint))
    config = load_config(file)
    local = run_assessment(config, tmp_path / "local", _engine(config), None)
    caplog.clear()
    with caplog.at_level("INFO", logger="werkzeug"):  # the S3 endpoint's request log
        spread = run_assessment(config, tmp_path / "dask", _engine(config, cluster), None)
    for key in _parts():
        if key.endswith((".csv", ".csv.gz")):
            gets = [r for r in caplog.messages if f"GET /{name}/calls/{key} HTTP" in r]
            assert len(gets) == 1, (key, gets)
    _same_catalog(local.output, spread.output)
    assert local.manifest["inputs"] == spread.manifest["inputs"]
    assert len(spread.manifest["inputs"]) == 3
    assert _pieces_left(cluster) == []

    rows = pd.read_csv(SAMPLE, dtype=str, nrows=400)
    rows.loc[300, "lat"] = "north"
    put("calls/day=4/part-0.csv", rows.to_csv(index=False).encode())
    with pytest.raises(InputError) as caught:
        run_assessment(config, tmp_path / "bad", _engine(config, cluster), None)
    assert str(caught.value).startswith(f"s3://{name}/calls/day=4/part-0.csv:302: ")
    assert _pieces_left(cluster) == []


def test_an_upper_case_scheme_and_a_key_with_brackets_are_read(endpoint, bucket, tmp_path):
    name, put = bucket
    put("odd/part [1].csv", b"uid,t\n1,2\n")
    (one,) = listed(Store(f"s3://{name}/odd/part [1].csv", _options(endpoint)))
    assert one.url == f"s3://{name}/odd/part [1].csv"  # a name, not a pattern
    for key, body in _parts().items():
        put(f"calls/{key}", body)
    config = _config(tmp_path, f"S3://{name}/calls/", storage_options=_options_map(endpoint))
    result = CliRunner().invoke(main, ["validate", str(config)])
    assert result.exit_code == 0, result.output


def test_a_full_disk_and_a_file_replaced_while_fetched_are_said(
    endpoint, bucket, tmp_path, monkeypatch
):
    import errno

    from prudence_cli.io import remote

    name, put = bucket
    put("a.csv", b"uid,t\n1,2\n")
    (file,) = listed(Store(f"s3://{name}/a.csv", _options(endpoint)))

    class Full(io.BytesIO):
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(remote, "open", lambda path, mode: Full(), raising=False)
    with (
        pytest.raises(InputError, match="no space left on that disk.*set TMPDIR"),
        fetched(file, tmp_path),
    ):
        pass
    monkeypatch.undo()

    class FileExpired(OSError):  # fsspec's, raised when an object changes mid-read
        pass

    with (
        pytest.raises(InputError, match="changed in the store while it was read: run again"),
        remote.reaching(file.url),
    ):
        raise FileExpired("the object no longer exists")


def _refused_on_a_worker(url: str) -> None:
    from prudence_cli.cluster_scratch import on_worker
    from prudence_cli.io.remote import StoreError

    with on_worker():
        raise StoreError(url, "access denied")


def test_what_the_store_refuses_a_worker_names_the_worker(cluster):
    with pytest.raises(InputError) as caught:
        cluster.client.submit(_refused_on_a_worker, "s3://b/a.csv").result()
    assert str(caught.value).startswith("s3://b/a.csv: access denied (on the Dask worker tcp://")


@pytest.mark.parametrize(
    "command",
    [
        ["assess", "CONFIG", "--out", "s3://b/catalog"],
        ["report", "--out", "s3://b/report.html"],
        ["sanitize", "--threshold", "0.3", "--out", "gs://b/release"],
    ],
)
def test_outputs_are_written_to_local_paths_only(tmp_path, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = str(_config(tmp_path, str(SAMPLE)))
    result = CliRunner().invoke(main, [config if c == "CONFIG" else c for c in command])
    assert result.exit_code == 2
    assert "is a URL: outputs are written to a local path" in result.output
    assert not any(p.name.endswith(":") for p in tmp_path.iterdir())  # no folder `s3:`


def test_an_http_index_is_listed_with_each_files_size(tmp_path):
    """An HTTP index page lists links without sizes: each file is asked its own, so that
    `validate` checks its header instead of taking it for an empty part."""
    import functools
    import http.server
    import threading

    pytest.importorskip("aiohttp")
    (tmp_path / "parts").mkdir()
    rows = pd.read_csv(SAMPLE, dtype=str, nrows=2_000)
    rows.iloc[:1_000].to_csv(tmp_path / "parts" / "a.csv", index=False)
    rows.iloc[1_000:].rename(columns={"uid": "person"}).to_csv(
        tmp_path / "parts" / "b.csv", index=False
    )

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/parts/"
        sizes = {f.name: f.size for f in listed(Store(url))}
        assert sizes == {n: (tmp_path / "parts" / n).stat().st_size for n in ("a.csv", "b.csv")}
        result = CliRunner().invoke(main, ["validate", str(_config(tmp_path, url))])
        assert result.exit_code == 2  # b.csv's header was read, not skipped as empty
        assert f"{url}b.csv: no column 'uid'" in result.output
    finally:
        server.shutdown()
        server.server_close()
