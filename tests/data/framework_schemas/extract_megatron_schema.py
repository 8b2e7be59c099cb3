#!/usr/bin/env python3
"""Extract a JSON schema of Megatron-LM's command-line flags at a git ref (static analysis only).

Mechanisms: (1) every `<x>.add_argument(...)` in megatron/training/arguments.py (origin
"add_argument"; "condition" when under an `if`); (2) every `ArgumentGroupFactory(<Dataclass>,
exclude=...)` there (newer Megatron): dataclass fields become flags by the rules of
megatron/training/argument_utils.py (origin "dataclass:<Class>").

  python3 extract_megatron_schema.py --git-dir <Megatron-LM git dir> --ref <ref> --out <json>
"""
import argparse
import ast
import json
import subprocess

ARGS_PY = "megatron/training/arguments.py"
SELF = "tests/data/framework_schemas/extract_megatron_schema.py"
PRIMITIVE = {"int", "float", "str", "bool", "list", "dict", "tuple", "set", "bytes", "Any", "Path"}
UNSUPPORTED = {"List", "Dict", "Tuple", "Callable", "ContextManager", "Sequence", "Iterable"}
EXTERNAL_ENUMS = {"signal.Signals"}  # enums outside the repository (CLI takes member names)


class TypeInferenceError(Exception):
    pass


def literal(node):
    """Value of a literal node (also folds `2 ** 32`-style arithmetic); ValueError otherwise."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        ops = {ast.Pow: pow, ast.Mult: lambda a, b: a * b, ast.Add: lambda a, b: a + b,
               ast.Sub: lambda a, b: a - b}
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](literal(node.left), literal(node.right))
        raise ValueError(ast.unparse(node))


def name_of(node):
    return "lambda" if isinstance(node, ast.Lambda) else ast.unparse(node)


def kwargs_record(kw):
    """{add_argument keyword: AST node} -> JSON record (non-literal values go to <key>_expr)."""
    rec = {}
    for key, node in kw.items():
        if key == "type":
            rec["type"] = name_of(node)
        elif key == "action":
            rec["action"] = node.value if isinstance(node, ast.Constant) else \
                ast.unparse(node).removeprefix("argparse.")
        elif key == "choices":  # only a literal list/tuple of constants counts
            try:
                vals = literal(node)
            except ValueError:
                vals = None
            if isinstance(vals, (list, tuple)) and all(isinstance(v, (str, int, float, type(None))) for v in vals):
                rec["choices"] = list(vals)
            else:
                rec.update(choices="<dynamic>", choices_expr=ast.unparse(node))
        elif key in ("default", "nargs", "dest", "const", "required"):
            try:
                rec[key] = literal(node)
            except ValueError:
                rec[key + "_expr"] = ast.unparse(node)
    return rec


def top_level(body):
    """Module-level statements, also inside top-level if/try blocks."""
    for n in body:
        yield n
        if isinstance(n, (ast.If, ast.Try)):
            for b in [n.body, n.orelse, getattr(n, "finalbody", [])] + [h.body for h in getattr(n, "handlers", [])]:
                yield from top_level(b)


class Repo:
    def __init__(self, git_dir, ref):
        self.git_dir, self.ref, self._ast = git_dir, ref, {}
        self.files = set(self.git("ls-tree", "-r", "--name-only", ref).split())

    def git(self, *a):
        return subprocess.run(["git", "--git-dir", self.git_dir, *a], check=True,
                              capture_output=True, text=True).stdout

    def tree(self, path):
        if path not in self._ast:
            self._ast[path] = ast.parse(self.git("show", f"{self.ref}:{path}"))
        return self._ast[path]

    def resolve(self, path, name, scope=None):
        """(path, ClassDef) of class `name` as seen from file `path` (imports inside function
        `scope` first), following `from x import y` (also relative) and `A = B` aliases."""
        local = [n for n in ast.walk(scope) if isinstance(n, ast.ImportFrom)] if scope else []
        for n in local + list(top_level(self.tree(path).body)):
            if isinstance(n, ast.ClassDef) and n.name == name:
                return path, n
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and \
                    any(getattr(t, "id", None) == name for t in n.targets):
                return self.resolve(path, n.value.id)
            for al in n.names if isinstance(n, ast.ImportFrom) else []:
                if (al.asname or al.name) == name:
                    mod = (n.module or "").replace(".", "/")
                    if n.level:  # relative import
                        mod = path.rsplit("/", n.level)[0] + ("/" + mod if mod else "")
                    for target in (mod + ".py", mod + "/__init__.py"):
                        if target in self.files and target != path:
                            return self.resolve(target, al.name)
        return None, None


class Extractor:
    def __init__(self, repo):
        self.repo, self.flags, self.unresolved = repo, {}, []

    def problem(self, path, line, reason, node=None):
        self.unresolved.append(dict({"file": path, "line": line, "reason": reason},
                                    **({"code": ast.unparse(node)[:200]} if node else {})))

    def add(self, names, rec, path, line):
        for i, name in enumerate(names):
            if name in self.flags:
                self.problem(path, line, f"duplicate {name}, first at {self.flags[name]['defined_at']}")
            else:
                self.flags[name] = dict(rec, alias_of=names[0]) if i else dict(rec)

    # ---- mechanism 1: add_argument calls ------------------------------------------------
    def walk(self, node, fn=None, cond=()):
        """Visit every call; `fn` is the enclosing function, `cond` the enclosing if-tests."""
        if isinstance(node, ast.FunctionDef):
            fn, cond = node, ()
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            for c in node.body:
                self.walk(c, fn, cond + (test,))
            for c in node.orelse:
                self.walk(c, fn, cond + (f"not ({test})",))
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "add_argument":
            self.add_argument(node, cond)
        elif isinstance(node, ast.Call) and name_of(node.func) == "ArgumentGroupFactory":
            self.factory(node, fn)
        for child in ast.iter_child_nodes(node):
            self.walk(child, fn, cond)

    def add_argument(self, call, cond):
        if any(not (isinstance(a, ast.Constant) and isinstance(a.value, str)) for a in call.args) \
                or any(k.arg is None for k in call.keywords):
            return self.problem(ARGS_PY, call.lineno, "non-literal option strings", call)
        names = [a.value for a in call.args if a.value.startswith("--")]
        rec = kwargs_record({k.arg: k.value for k in call.keywords if k.arg != "help"})
        rec.update(origin="add_argument", defined_at=f"{ARGS_PY}:{call.lineno}")
        if cond:
            rec["condition"] = " and ".join(cond)
        if rec.get("action") == "BooleanOptionalAction":  # argparse adds --no-<flag> itself
            names += ["--no-" + n[2:] for n in names]
        self.add(names, rec, ARGS_PY, call.lineno)

    # ---- mechanism 2: ArgumentGroupFactory(<dataclass>) ---------------------------------
    def factory(self, call, fn):
        excl = {k.arg: k.value for k in call.keywords}.get("exclude", (call.args[1:] or [None])[0])
        if isinstance(excl, ast.Name) and fn is not None:  # exclude=<local list variable>
            var = excl.id
            for n in ast.walk(fn):
                if isinstance(n, ast.Assign) and any(getattr(t, "id", 0) == var for t in n.targets):
                    excl = n.value
        try:
            exclude = set(literal(excl)) if excl is not None else set()
        except ValueError:
            exclude = set()
            self.problem(ARGS_PY, call.lineno, "non-literal exclude list", call)
        path, cls = self.repo.resolve(ARGS_PY, name_of(call.args[0]), fn)
        if cls is None:
            return self.problem(ARGS_PY, call.lineno, "cannot resolve dataclass", call)
        for name, (fpath, ann, kwf) in self.dataclass_fields(path, cls).items():
            if name not in exclude and not ("init" in kwf and literal(kwf["init"]) is False):
                self.field_flag(cls.name, fpath, name, ann, kwf)

    def dataclass_fields(self, path, cls):
        """{name: (path, annotation, field kwargs)} in dataclasses.fields() order."""
        fields = {}
        for base in cls.bases:
            bpath, bcls = self.repo.resolve(path, ast.unparse(base))
            if bcls is not None:
                fields.update(self.dataclass_fields(bpath, bcls))
        for st in cls.body:
            if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)) or \
                    ast.unparse(st.annotation).split("[")[0].split(".")[-1] in ("ClassVar", "InitVar"):
                continue
            v, kwf = st.value, {}
            if isinstance(v, ast.Call) and name_of(v.func) in ("field", "dataclasses.field"):
                kwf = {k.arg: k.value for k in v.keywords}
            elif v is not None:
                kwf = {"default": v}
            fields[st.target.id] = (path, st.annotation, dict(kwf, lineno=st.lineno))
        return fields

    def enum_members(self, path, cls):
        """Member names if `cls` is an Enum (directly or via a base class), else None."""
        for b in cls.bases:
            bpath, bcls = self.repo.resolve(path, ast.unparse(b))
            if ast.unparse(b).split(".")[-1] in ("Enum", "IntEnum", "StrEnum", "Flag") or \
                    (bcls is not None and self.enum_members(bpath, bcls) is not None):
                return [t.id for st in cls.body if isinstance(st, ast.Assign) for t in st.targets
                        if isinstance(t, ast.Name) and not t.id.startswith("_")]
        return None

    def union_members(self, ann):
        if isinstance(ann, ast.BinOp):  # X | Y
            return self.union_members(ann.left) + self.union_members(ann.right)
        if isinstance(ann, ast.Subscript) and name_of(ann.value) in ("Optional", "Union"):
            s = ann.slice
            out = [m for e in (s.elts if isinstance(s, ast.Tuple) else [s]) for m in self.union_members(e)]
            return out + [ast.Constant(None)] if name_of(ann.value) == "Optional" else out
        return [ann]

    def infer(self, path, ann):
        """Mirror of ArgumentGroupFactory._extract_type, on the annotation's AST."""
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):  # string annotation
            ann = ast.parse(ann.value, mode="eval").body
        members = self.union_members(ann)
        if len(members) > 1:  # only Optional[X] (X first, None second) is accepted
            if ast.unparse(members[1]) == "None":
                return self.infer(path, members[0])
            raise TypeInferenceError(f"Unions not supported: {ast.unparse(ann)}")
        if isinstance(ann, ast.Subscript):
            origin, s = name_of(ann.value), ann.slice
            elts = s.elts if isinstance(s, ast.Tuple) else [s]
            if origin in ("list", "List") and len(elts) == 1:
                return dict(self.infer(path, elts[0]), nargs="+")
            if origin in ("Literal", "typing.Literal"):
                vals = [literal(e) for e in elts]
                return {"type": type(vals[0]).__name__, "choices": vals}
            raise TypeInferenceError(f"Unsupported type: {ast.unparse(ann)}")
        name = name_of(ann)
        if name in PRIMITIVE:
            return {"type": name}
        if name in UNSUPPORTED or name.startswith("typing."):
            raise TypeInferenceError(f"Unsupported type: {name}")
        if name in EXTERNAL_ENUMS:
            return {"type": name, "choices": "<dynamic>", "choices_expr": f"member names of {name}"}
        cpath, cls = self.repo.resolve(path, name)
        members = self.enum_members(cpath, cls) if cls is not None else None
        # Enum: type=enum_type_handler (Enum[name]) so the CLI takes member *names*
        return {"type": name, "choices": members} if members is not None else {"type": name}

    def field_flag(self, cls_name, path, name, ann, kwf):
        if "default" in kwf:
            default = kwf["default"]
        elif "default_factory" in kwf:  # ArgumentGroupFactory calls the factory
            f = kwf["default_factory"]
            default = f.body if isinstance(f, ast.Lambda) else ast.parse(
                {"list": "[]", "dict": "{}"}.get(ast.unparse(f), ast.unparse(f) + "()"), mode="eval").body
        else:
            return self.problem(path, kwf["lineno"], f"{cls_name}.{name} has no default")
        rec = dict(kwargs_record({"default": default}), dest=name)
        names = ["--" + name.replace("_", "-")]
        md, meta = kwf.get("metadata"), None
        if isinstance(md, ast.Dict):
            meta = next((v for k, v in zip(md.keys, md.values)
                         if isinstance(k, ast.Constant) and k.value == "argparse_meta"), None)
        elif md is not None:
            self.problem(path, kwf["lineno"], f"{cls_name}.{name}: non-literal metadata")
        try:
            rec.update(self.infer(path, ann))
            if rec.get("type") == "bool":
                del rec["type"]
                is_false = isinstance(kwf.get("default"), ast.Constant) and kwf["default"].value is False
                rec["action"] = "store_true" if is_false else "store_false"
                if not is_false:
                    names = ["--no-" + names[0][2:], "--disable-" + names[0][2:]]
        except TypeInferenceError as e:
            if meta is None:  # ArgumentGroupFactory would raise here
                return self.problem(path, kwf["lineno"], f"{cls_name}.{name}: {e}")
        if isinstance(meta, ast.Dict):  # argparse_meta overrides everything inferred
            mkw = {k.value: v for k, v in zip(meta.keys, meta.values) if isinstance(k, ast.Constant)}
            if "arg_names" in mkw:
                names = list(literal(mkw.pop("arg_names")))
            for k in mkw:
                rec.pop(k, None), rec.pop(k + "_expr", None)
            rec.update(kwargs_record({k: v for k, v in mkw.items() if k != "help"}))
        elif meta is not None:
            self.problem(path, kwf["lineno"], f"{cls_name}.{name}: non-literal argparse_meta")
        rec.update(origin=f"dataclass:{cls_name}", defined_at=f"{path}:{kwf['lineno']}")
        self.add(names, rec, path, kwf["lineno"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--git-dir", required=True, help="Megatron-LM git directory (bare is fine)")
    ap.add_argument("--ref", required=True, help="tag, branch or commit")
    ap.add_argument("--out", required=True, help="output JSON path")
    a = ap.parse_args()
    repo = Repo(a.git_dir, a.ref)
    commit, date = repo.git("show", "-s", "--format=%H %cs", f"{a.ref}^{{commit}}").split()
    ex = Extractor(repo)
    ex.walk(repo.tree(ARGS_PY))
    out = {"framework": "megatron-lm", "ref": a.ref, "commit": commit, "commit_date": date,
           "source": ARGS_PY, "extracted_by": SELF, "flags": ex.flags,
           "unresolved": sorted(ex.unresolved, key=lambda u: (u["file"], u["line"]))}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{a.ref} {commit} {date}: {len(ex.flags)} flags, {len(ex.unresolved)} unresolved")


if __name__ == "__main__":
    main()
