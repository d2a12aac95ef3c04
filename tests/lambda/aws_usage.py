"""What AWS the code does, read from the code: every S3, DynamoDB, Secrets Manager, SQS, Comprehend and
Bedrock Guardrails call, who reaches it.

A test that pins a list of IAM actions passes until someone adds a call; this module derives the
list instead, so a new call (or a call moved to another module) changes what the template must
grant. It reads the source with `ast`, imports nothing of Momor's, and scans the whole package
(every module under shared/momor, wherever it lives), so moving code between modules changes
nothing here.

    sites = call_sites()                       # every AWS operation in the package
    reached = reachable(entry_modules)         # what a Lambda's entry modules can run
    needs = [s for s in sites if s.function in reached]

Call sites, two kinds:
- boto3: `<client>.<method>(...)` where the receiver is (or was assigned from) an expression
  containing `<x>.client("s3" | "dynamodb" | "secretsmanager")` (or `<x>.bounded_client(...)`, or
  `<x>.lean_client(...)`, the signed single requests of store/aws.py, named like boto3's) and the
  method is an operation of that service's botocore model (so `client.exceptions` or
  `client.meta` are not operations).
- the signed-HTTP DynamoDB path: a function that writes the `X-Amz-Target` header and takes an
  `operation` parameter is a sink; so is a function that passes its own `operation` to a sink; a
  call to a sink with a string constant for `operation` is a DynamoDB operation.

Resource: what the call names (`TableName`, `Bucket`, `SecretId`) comes from the configuration
(momor.config), and its field is the one the enclosing function reads, else the one its module
reads (`get_config().records_table`, `config.need("api_keys_table")`); a call whose module reads
two tables is ambiguous and reported as such rather than guessed. Where the partition key is built
by a local function returning an f-string with a literal head (`f"rate#{...}"`), that head is the
key prefix the call can touch (for a `dynamodb:LeadingKeys` condition).

Anything AWS the scan cannot read is refused rather than skipped (`unreadable_calls`, which the
template test requires to be empty): another service, a client it cannot follow, a paginator, a
request signed outside the two signing paths above. A new kind of call fails the test here before
it fails on AWS with AccessDenied; teach this module to read it, then grant it.

Reachability is a call graph over-approximated on purpose: any reference to a function counts (a
callback, `in_thread(f)`, a route registered by `add_api_route`), an attribute on an unknown
receiver (`backend.read_record`, `self._refresh`) reaches every method of that name in the classes
the reached code refers to. Over-approximation can only ask for a grant the code does not use,
which the test then shows; it cannot hide one the code does.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_ROOT = ROOT / "shared"
PACKAGE = "momor"
SERVICES = ("s3", "dynamodb", "secretsmanager", "sqs", "comprehend", "bedrock-runtime", "sts", "cognito-idp")
RESOURCELESS = ("comprehend", "bedrock-runtime", "sts", "cognito-idp")
"""Services whose resources no setting names (Comprehend's DetectPiiEntities has no resource-level
permissions: `*`; a Bedrock guardrail is named by a caller's policy: the account's guardrails; STS's
GetCallerIdentity, which the operator's `momor` CLI asks, names no resource and needs no grant; the
CLI's AdminGetUser names the user pool its operator gives, no setting), so their sites read no
settings field."""
RESOURCE_ARGS = {"TableName", "Bucket", "Key", "SecretId"}
"""Call arguments that name what a call touches (S3's Key is the object; DynamoDB's Key is a dict)."""
IAM_EXCEPTIONS = {"s3:HeadObject": "s3:GetObject", "s3:ListObjectsV2": "s3:ListBucket",
                  "bedrock-runtime:ApplyGuardrail": "bedrock:ApplyGuardrail"}
"""Operations whose IAM action is not named after them."""


@dataclass(frozen=True)
class Site:
    """One AWS operation in the source."""

    service: str
    operation: str
    """The API operation (`UpdateItem`, `GetObject`)."""
    function: str
    """The enclosing function, `module:qualname` (a method is `module:Class.method`)."""
    line: int
    settings: frozenset[str]
    """The settings fields that name its resource (one table, or the catalog bucket and key)."""
    key_prefix: str | None = None
    """A literal head every partition key it touches starts with, when the code shows one."""
    on_index: bool = False
    """Its function names an `IndexName` (a Query of an index, not of the table itself)."""

    @property
    def action(self) -> str:
        name = f"{self.service}:{self.operation}"
        return IAM_EXCEPTIONS.get(name, name)

    def __str__(self) -> str:
        return f"{self.action} at {self.function} (line {self.line})"


# --- the source ---------------------------------------------------------------------------------


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)
    """Local name -> `module` or `module:symbol`."""
    defs: dict[str, ast.AST] = field(default_factory=dict)
    """qualname -> def (functions, classes, methods)."""
    bases: dict[str, list[ast.expr]] = field(default_factory=dict)
    """class name -> its base expressions."""


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def modules(package_root: Path = PACKAGE_ROOT, root: Path = ROOT) -> dict[str, Module]:
    """Every module of the package (under `package_root`) and every function's app.py (under `root`),
    parsed. Other roots are for testing this module on a changed copy of the package."""
    paths = [(p, package_root) for p in sorted((package_root / PACKAGE).rglob("*.py"))]
    paths += [(p, root) for p in sorted((root / "functions").glob("*/app.py"))]
    found = {}
    for path, root in paths:
        name = _module_name(path, root)
        found[name] = Module(name, path, ast.parse(path.read_text(), str(path)))
    for module in found.values():
        _index(module, found)
    return found


def _index(module: Module, known: dict[str, Module]) -> None:
    is_package = module.path.name == "__init__.py"
    for node in module.tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                module.imports[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module.name, is_package, node.module, node.level)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                module.imports[alias.asname or alias.name] = target if target in known else f"{base}:{alias.name}"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            module.defs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            module.defs[node.name] = node
            module.bases[node.name] = node.bases
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    module.defs[f"{node.name}.{item.name}"] = item


def _absolute(current: str, is_package: bool, target: str | None, level: int) -> str:
    if not level:
        return target or ""
    parts = current.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([target] if target else []))


# --- reachability ----------------------------------------------------------------------------------


def _resolve(module: Module, name: str, known: dict[str, Module]) -> str | None:
    """A name used in `module` -> `module` (a module), `module:qualname` (a def), or None."""
    if name in module.defs:
        return f"{module.name}:{name}"
    target = module.imports.get(name)
    if target is None:
        return None
    if ":" not in target:
        return target if target in known else None
    owner, _, symbol = target.partition(":")
    if owner in known:  # follow one re-export (`from .x import y` in a package __init__)
        return _resolve(known[owner], symbol, known) if symbol not in known[owner].defs else target
    return None


def _body_nodes(node: ast.AST) -> Iterable[ast.AST]:
    """Everything a def runs when called (its nested defs included: they are what it builds)."""
    if isinstance(node, ast.Module):
        for statement in node.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from statement.decorator_list
            elif isinstance(statement, ast.ClassDef):
                yield from statement.bases
                for item in statement.body:
                    if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        yield from ast.walk(item)
            else:
                yield from ast.walk(statement)
    else:
        yield from ast.walk(node)


def _attribute_target(node: ast.Attribute, module: Module, known: dict[str, Module]) -> str | None:
    """`mod.f`, `pkg.mod`, `Class.method` when the base resolves; None for an unknown receiver."""
    if not isinstance(node.value, ast.Name):
        return None
    base = _resolve(module, node.value.id, known)
    if base is None:
        return None
    if ":" not in base:
        sub = f"{base}.{node.attr}"
        if sub in known:
            return sub
        return _resolve(known[base], node.attr, known) if base in known else None
    owner, _, qualname = base.partition(":")
    if f"{qualname}.{node.attr}" in known[owner].defs:
        return f"{owner}:{qualname}.{node.attr}"
    return None


def reachable(entries: Iterable[str]) -> set[str]:
    """Every def (`module:qualname`) the entry modules can run, module bodies as `module:`."""
    known = modules()
    done: set[str] = set()
    todo = [f"{m}:" for m in entries]
    live_classes: set[str] = set()
    pending: set[str] = set()  # attribute names used on receivers we cannot name
    while todo:
        item = todo.pop()
        if item in done:
            continue
        done.add(item)
        owner, _, qualname = item.partition(":")
        module = known[owner]
        node = module.defs[qualname] if qualname else module.tree
        if isinstance(node, ast.ClassDef):
            live_classes.add(item)
            todo += [f"{owner}:{qualname}.{m}" for m in _methods(node) if m.startswith("__")]
            todo += [f"{owner}:{qualname}.{m}" for m in _methods(node) if m in pending]
            todo += [t for b in module.bases.get(qualname, []) if (t := _ref(b, module, known))]
            continue
        for sub in _body_nodes(node):
            if isinstance(sub, ast.Name | ast.Attribute):
                target = _ref(sub, module, known)
                if target is not None:
                    todo.append(target if ":" in target else f"{target}:")
                elif isinstance(sub, ast.Attribute) and sub.attr not in pending:
                    pending.add(sub.attr)
                    for cls in live_classes:
                        cls_owner, _, cls_name = cls.partition(":")
                        if f"{cls_name}.{sub.attr}" in known[cls_owner].defs:
                            todo.append(f"{cls}.{sub.attr}")
            elif isinstance(sub, ast.Import | ast.ImportFrom):  # imports inside a def run when it does
                todo += [f"{t}:" for t in _imported_modules(sub, module, known)]
        if not qualname:
            # A decorated def is registered by its decorator (a route, a SnapStart hook): it runs.
            todo += [f"{owner}:{d.name}" for d in module.tree.body
                     if isinstance(d, ast.FunctionDef | ast.AsyncFunctionDef) and d.decorator_list]
            todo += [f"{t}:" for t in module.imports.values() if t in known]
            todo += [f"{t.partition(':')[0]}:" for t in module.imports.values() if t.partition(":")[0] in known]
    return done


def _ref(node: ast.expr, module: Module, known: dict[str, Module]) -> str | None:
    if isinstance(node, ast.Name):
        return _resolve(module, node.id, known)
    if isinstance(node, ast.Attribute):
        return _attribute_target(node, module, known)
    return None


def _methods(node: ast.ClassDef) -> list[str]:
    return [i.name for i in node.body if isinstance(i, ast.FunctionDef | ast.AsyncFunctionDef)]


def _imported_modules(node: ast.Import | ast.ImportFrom, module: Module, known: dict[str, Module]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in known]
    base = _absolute(module.name, module.path.name == "__init__.py", node.module, node.level)
    found = [base] if base in known else []
    return found + [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]


# --- call sites ------------------------------------------------------------------------------------


@functools.cache
def operation_names(service: str) -> dict[str, str]:
    """boto3 method name -> API operation name, from botocore's model of the service."""
    import botocore.session
    from botocore import xform_name

    model = botocore.session.get_session().get_service_model(service)
    return {xform_name(op): op for op in model.operation_names}


def _client_service(node: ast.AST) -> str | None:
    """The service of a `<x>.client("svc")` call anywhere inside `node`, or of `<x>.lean_client("svc")`
    (store/aws.py's signed single requests, which keep boto3's method and argument names)."""
    for sub in ast.walk(node):
        if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                and sub.func.attr in ("client", "lean_client", "bounded_client")
                and sub.args and isinstance(sub.args[0], ast.Constant) and sub.args[0].value in SERVICES):
            return sub.args[0].value
    return None


def _made_client(value: ast.AST) -> str | None:
    """The service of a client the expression itself makes (`aws.client("dynamodb")`, or one of the
    branches of `a or b` / `a if c else b`); None for anything made from a client, such as an answer
    (`answer = aws.client("dynamodb").update_item(...)`), whose methods are a dict's, not the client's."""
    if isinstance(value, ast.BoolOp):
        return next((s for v in value.values if (s := _made_client(v))), None)
    if isinstance(value, ast.IfExp):
        return _made_client(value.body) or _made_client(value.orelse)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in (
            "client", "lean_client", "bounded_client"):
        return _client_service(value)
    return None


def _defs(module: Module) -> Iterable[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for qualname, node in module.defs.items():
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield qualname, node


def _settings_read(node: ast.AST, fields: set[str]) -> set[str]:
    """Settings fields named in `node`: `x.records_table` or `need("records_table")`."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in fields:
            found.add(sub.attr)
        elif isinstance(sub, ast.Constant) and sub.value in fields:
            found.add(sub.value)
    return found


def _resource_settings(service: str, fn: ast.AST, module: Module, fields: set[str]) -> frozenset[str]:
    if service in RESOURCELESS:
        return frozenset()
    kind = {"dynamodb": "_table", "s3": "_bucket", "secretsmanager": "_secret", "sqs": "_queue_url"}[service]
    for scope in (fn, module.tree):
        read = _settings_read(scope, fields)
        named = {f for f in read if kind in f}
        if service == "s3":  # a bucket, and the setting naming its one object where there is one (the catalog's)
            named = {f for f in named if f.endswith("_bucket")}
            named |= {f for f in read if f.endswith("_key") and f"{f.removesuffix('_key')}_bucket" in named}
        if named:
            return frozenset(named)
    return frozenset()


def _key_prefix(call: ast.Call, module: Module) -> str | None:
    """The literal head of the partition key, when a local function builds it as an f-string."""
    for value in _argument_values(call):
        if not isinstance(value, ast.Dict):
            continue
        for key, item in zip(value.keys, value.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == "Key" and isinstance(item, ast.Dict):
                return _prefix_of_key(item, module)
    for keyword in call.keywords:
        if keyword.arg == "Key" and isinstance(keyword.value, ast.Dict):
            return _prefix_of_key(keyword.value, module)
    return None


def _prefix_of_key(key: ast.Dict, module: Module) -> str | None:
    heads = set()
    for attribute in key.values:  # {"keyHash": {"S": <expr>}}: one partition key
        if not (isinstance(attribute, ast.Dict) and attribute.values):
            return None
        heads.add(_literal_head(attribute.values[0], module))
    return heads.pop() if len(heads) == 1 else None


def _literal_head(expr: ast.expr, module: Module) -> str | None:
    if isinstance(expr, ast.JoinedStr) and expr.values and isinstance(expr.values[0], ast.Constant):
        return str(expr.values[0].value)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        builder = module.defs.get(expr.func.id)
        returns = [r.value for r in ast.walk(builder) if isinstance(r, ast.Return) and r.value] if builder else []
        heads = {_literal_head(r, module) for r in returns}
        return heads.pop() if len(heads) == 1 else None
    return None


def _argument_values(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def _boto3_sites(module: Module, fields: set[str]) -> list[Site]:
    sites = []
    for qualname, fn in _defs(module):
        clients: dict[str, str] = {}  # local name -> service
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Assign) and (service := _client_service(sub.value)):
                clients.update({t.id: service for t in sub.targets if isinstance(t, ast.Name)})
        for sub in ast.walk(fn):
            if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)):
                continue
            receiver = sub.func.value
            service = clients.get(receiver.id) if isinstance(receiver, ast.Name) else _client_service(receiver)
            operation = operation_names(service).get(sub.func.attr) if service else None
            if service and operation:
                sites.append(Site(service, operation, f"{module.name}:{qualname}", sub.lineno,
                                  _resource_settings(service, fn, module, fields), _key_prefix(sub, module),
                                  _names_an_index(fn)))
    return sites


def _dynamodb_sinks(known: dict[str, Module]) -> set[str]:
    """Names of functions that send a DynamoDB operation given as their `operation` parameter."""
    sinks = set()
    candidates = [(q, fn) for m in known.values() for q, fn in _defs(m)
                  if "operation" in [a.arg for a in fn.args.args + fn.args.kwonlyargs]]
    for qualname, fn in candidates:
        if any(isinstance(s, ast.Constant) and s.value == "X-Amz-Target" for s in ast.walk(fn)):
            sinks.add(qualname.rsplit(".", 1)[-1])
    grew = True
    while grew:
        grew = False
        for qualname, fn in candidates:
            name = qualname.rsplit(".", 1)[-1]
            if name not in sinks and any(_passes_operation(s, sinks) for s in ast.walk(fn)):
                sinks.add(name)
                grew = True
    return sinks


def _callee_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return call.func.id if isinstance(call.func, ast.Name) else None


def _passes_operation(node: ast.AST, sinks: set[str]) -> bool:
    return (isinstance(node, ast.Call) and _callee_name(node) in sinks
            and any(isinstance(v, ast.Name) and v.id == "operation" for v in _argument_values(node)))


def _signed_http_sites(module: Module, sinks: set[str], fields: set[str]) -> list[Site]:
    sites = []
    operations = set(operation_names("dynamodb").values())
    for qualname, fn in _defs(module):
        for sub in ast.walk(fn):
            if not (isinstance(sub, ast.Call) and _callee_name(sub) in sinks):
                continue
            named = [k.value for k in sub.keywords if k.arg == "operation"] + sub.args[:1]
            if named and isinstance(named[0], ast.Constant) and named[0].value in operations:
                sites.append(Site("dynamodb", named[0].value, f"{module.name}:{qualname}", sub.lineno,
                                  _resource_settings("dynamodb", fn, module, fields), _key_prefix(sub, module),
                                  _names_an_index(fn)))
    return sites


def _names_an_index(fn: ast.AST) -> bool:
    """The function writes `IndexName` (a payload key or a boto3 keyword): its Query reads an index."""
    return any((isinstance(n, ast.Constant) and n.value == "IndexName") or
               (isinstance(n, ast.keyword) and n.arg == "IndexName") for n in ast.walk(fn))


def call_sites(fields: Iterable[str], package_root: Path = PACKAGE_ROOT) -> list[Site]:
    """Every AWS operation in the package; `fields` are the settings fields that name resources."""
    known = modules(package_root)
    field_set = set(fields)
    sinks = _dynamodb_sinks(known)
    sites = []
    for module in known.values():
        sites += _boto3_sites(module, field_set)
        sites += _signed_http_sites(module, sinks, field_set)
    return sites


def unreadable_calls(package_root: Path = PACKAGE_ROOT) -> list[str]:
    """Every AWS call the scan cannot turn into a Site: it fails the template test, so a new kind of
    call is read (or refused) here before it meets AccessDenied on AWS. Strict on purpose:
    - a client of a service outside SERVICES (`client("sns")`), a service that is not a literal
      (outside a factory that takes it as its own parameter), and boto3's resource API;
    - a client the scan cannot follow: kept anywhere but a local name or used at once (`self._c =
      client(...)`, `return client(...)`);
    - a method of a client that is not an operation of the service (`get_paginator`, `get_waiter`:
      the operations they run are not seen);
    - a signed request (`sigv4.sign`) for a service outside SERVICES, or made anywhere but a DynamoDB
      sink or a forwarder (aws._signed) called only from a boto3-named method of that service;
    - `X-Amz-Target` written outside a sink, and a sink called with an operation that is not a literal."""
    known = modules(package_root)
    sinks = _dynamodb_sinks(known)
    forwarders = _sign_forwarders(known)
    found = []
    for module in known.values():
        for qualname, fn in _defs(module):
            where = f"{module.name}:{qualname}"
            found += [f"{where} line {line}: {why}" for line, why in _unreadable_in(fn, qualname, sinks, forwarders)]
    return found


_FACTORIES = ("client", "lean_client", "bounded_client", "create_client", "resource")
_NOT_OPERATIONS = frozenset({"close"})
"""Client methods that call no AWS operation."""


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]


def _parents(fn: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}


def _argument(call: ast.Call, name: str, position: int) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return call.args[position] if len(call.args) > position else None


def _sign_forwarders(known: dict[str, Module]) -> set[str]:
    """Functions that sign for the service given as their own `service` parameter (aws._signed)."""
    return {qualname.rsplit(".", 1)[-1] for m in known.values() for qualname, fn in _defs(m)
            for sub in ast.walk(fn) if isinstance(sub, ast.Call) and _callee_name(sub) == "sign"
            and isinstance(arg := _argument(sub, "service", 99), ast.Name) and arg.id in _params(fn)}


def _unreadable_in(fn: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str, sinks: set[str],
                   forwarders: set[str]) -> list[tuple[int, str]]:
    params, parents, name = _params(fn), _parents(fn), qualname.rsplit(".", 1)[-1]
    boto3_named = any(name in operation_names(svc) for svc in SERVICES)
    found = []
    for sub in ast.walk(fn):
        if isinstance(sub, ast.Call):
            found += [(sub.lineno, why) for why in _unreadable_call(sub, params, parents, name, sinks, forwarders)]
        elif isinstance(sub, ast.Constant) and sub.value == "X-Amz-Target" and "operation" not in params \
                and not boto3_named:
            # A lean client's method named like boto3's (store/aws.py `get_secret_value`) is read at its
            # call sites (`lean_client("secretsmanager").get_secret_value(...)`), as boto3's are.
            found.append((sub.lineno, "X-Amz-Target without `operation`"))
    found += [(line, why) for line, why in _unknown_client_methods(fn)]
    return found


def _unreadable_call(call: ast.Call, params: list[str], parents: dict[ast.AST, ast.AST], name: str,
                     sinks: set[str], forwarders: set[str]) -> list[str]:
    callee = _callee_name(call)
    if isinstance(call.func, ast.Attribute) and callee in _FACTORIES:
        return _unreadable_factory(call, callee, params, parents, name)
    if callee == "sign":
        service = _argument(call, "service", 99)
        if isinstance(service, ast.Name) and service.id in params:
            return []  # a forwarder: its callers are checked
        if isinstance(service, ast.Constant) and service.value == "dynamodb" and name in sinks:
            return []  # a DynamoDB sink: read through its callers' `operation`
        return [f"a request signed for {ast.unparse(service) if service else '?'} outside a sink the scan reads"]
    if callee in forwarders and name not in forwarders:
        service = _argument(call, "service", 0)
        if not (isinstance(service, ast.Constant) and service.value in SERVICES
                and name in operation_names(service.value)):
            return [f"{callee}({ast.unparse(service) if service else '?'}, ...) outside a boto3-named method"]
    operation = _argument(call, "operation", 0) if callee in sinks and name not in sinks else None
    # (A call of that name without arguments is another function's: sinks are matched by name.)
    if operation is not None and not (isinstance(operation, ast.Constant)
                                      and operation.value in operation_names("dynamodb").values()):
        return [f"{callee} called with operation {ast.unparse(operation)}"]
    return []


def _unreadable_factory(call: ast.Call, factory: str, params: list[str], parents: dict[ast.AST, ast.AST],
                        name: str) -> list[str]:
    service = call.args[0] if call.args else _argument(call, "service_name", 99)
    if factory == "resource":
        return [f"boto3 resource API ({ast.unparse(service) if service else '?'})"]
    if isinstance(service, ast.Name) and service.id in params and name in _FACTORIES:
        return []  # a factory (aws.client) taking the service as its own parameter: its callers are read
    if not (isinstance(service, ast.Constant) and service.value in SERVICES):
        return [f"a {factory} of {ast.unparse(service) if service else '?'}, a service the scan does not read"]
    holder = parents.get(call)
    while isinstance(holder, ast.BoolOp | ast.IfExp):  # `self._s3 or lean_client("s3")`
        holder = parents.get(holder)
    if isinstance(holder, ast.Attribute):  # used at once: client("s3").get_object(...)
        return []
    if isinstance(holder, ast.Assign) and all(isinstance(t, ast.Name) for t in holder.targets):
        return []
    return [f"a {service.value} client kept where the scan cannot follow it"]


def _unknown_client_methods(fn: ast.AST) -> list[tuple[int, str]]:
    """Calls on a client that are not operations of its service (paginators, waiters and the like)."""
    clients: dict[str, str] = {}
    for sub in ast.walk(fn):
        if isinstance(sub, ast.Assign) and (service := _made_client(sub.value)):
            clients.update({t.id: service for t in sub.targets if isinstance(t, ast.Name)})
    found = []
    for sub in ast.walk(fn):
        if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)):
            continue
        receiver = sub.func.value
        service = clients.get(receiver.id) if isinstance(receiver, ast.Name) else _client_service(receiver)
        if service and sub.func.attr not in operation_names(service) and sub.func.attr not in _NOT_OPERATIONS:
            found.append((sub.lineno, f"{service} client's {sub.func.attr}(), not an operation the scan reads"))
    return found
