#!/usr/bin/env python3
"""Extract the DeepSpeed JSON config keys that DeepSpeed actually reads, statically (stdlib only).

  python3 extract_deepspeed_schema.py --git-dir <DeepSpeed.git> --ref master --out deepspeed-master.json

Files are read with `git show` and parsed with `ast`; nothing is imported.
 * dict-style reads: get_scalar_param(d, KEY, DEFAULT), d.get(KEY, ...), d[KEY], KEY in d, where d is
   the user's config dict (`param_dict`, `self._param_dict`, `config` in deepspeed/__init__.py ...) or
   a sub-dict taken from it; KEY constants resolve through deepspeed/runtime/constants.py etc.
 * pydantic sections (DeepSpeedConfigModel: extra="forbid", so unknown sub-keys are errors;
   populate_by_name, so field name and alias both work): type, default, aliases, Enum choices.
 * "pipeline": defaults of get_pipeline_config() and which of its keys any code reads.
"""
import argparse, ast, json, re, subprocess

SELF = "tests/data/framework_schemas/extract_deepspeed_schema.py"
DICT_FILES = {  # file -> names bound to the user's top-level config dict
    "deepspeed/runtime/config.py": ("param_dict", "self._param_dict", "config"),
    "deepspeed/__init__.py": ("config",),
    "deepspeed/runtime/activation_checkpointing/config.py": ("param_dict",),
    "deepspeed/runtime/precision_config.py": ("param_dict",),
    "deepspeed/runtime/zero/config.py": ("param_dict",),
    "deepspeed/runtime/tensor_parallel/config.py": ("ds_config",),
    "deepspeed/profiling/config.py": ("param_dict",),
    "deepspeed/comm/config.py": ("ds_config",),
}
DEAD_HELPERS = {"get_sparse_attention_type"}  # defined in runtime/config.py, never called
PYDANTIC = [  # (json prefix, module, class)
    ("zero_optimization", "deepspeed.runtime.zero.config", "DeepSpeedZeroConfig"),
    ("bf16", "deepspeed.runtime.precision_config", "DeepSpeedBF16Config"),
    ("fp16", "deepspeed.runtime.precision_config", "DeepSpeedFP16Config"),
    ("tensor_parallel", "deepspeed.runtime.tensor_parallel.config", "TPTrainingConfig"),
    ("compile", "deepspeed.compile.config", "CompileConfig"),
    ("comms_logger", "deepspeed.comm.config", "CommsLoggerConfig"),
]
TYPE_HINTS = {  # keys whose default is None (or that are passed whole to a Config(**d))
    **dict.fromkeys(("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                     "steps_per_print", "sequence_parallel_size", "data_parallel_size",
                     "activation_checkpointing.number_checkpoints"), "int"),
    "optimizer.type": "str", "scheduler.type": "str", "log_level": "str",
    **dict.fromkeys(("optimizer.params", "scheduler.params", "hybrid_engine", "weight_quantization",
                     "expert_parallel", "bfloat16"), "object")}
GETTERS = ("get_scalar_param", "get_dict_param", "get_list_param")


def git(gd, *a):
    return subprocess.run(["git", "--git-dir", gd, *a], check=True, capture_output=True, text=True).stdout


def dotted(e):
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        d = dotted(e.value)
        return d and f"{d}.{e.attr}"
    return None


def type_of(v):
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "object"}.get(type(v))


class Repo:
    def __init__(self, gd, ref):
        self.gd, self.ref, self.mods = gd, ref, {}

    def module(self, name):
        if name not in self.mods:
            self.mods[name] = None
            for s in (".py", "/__init__.py"):
                try:
                    self.mods[name] = ast.parse(git(self.gd, "show", f"{self.ref}:{name.replace('.', '/')}{s}"))
                    break
                except subprocess.CalledProcessError:
                    pass
        return self.mods[name]

    def lookup(self, mod, name, seen=()):
        """Resolve a (dotted) name in module `mod` -> (node, module); follows imports and `import *`."""
        if (mod, name) in seen or not name:
            return None, mod
        seen += ((mod, name),)
        head, *rest = name.split(".")
        stars, last = [], None
        for st in getattr(self.module(mod), "body", []):
            if isinstance(st, (ast.ClassDef, ast.FunctionDef)) and st.name == head and not rest:
                return st, mod
            if isinstance(st, ast.Assign) and not rest and any(dotted(t) == head for t in st.targets):
                last = st  # the last binding wins (constants.py rebinds names used for doc strings)
            if isinstance(st, ast.ImportFrom):
                pkg = mod.split(".")[:None if self.module(mod + ".__init__") else -1]
                src = ".".join(pkg[:len(pkg) - st.level + 1] + [st.module or ""]).strip(".") if st.level else st.module
                for al in st.names:
                    if al.name == "*":
                        stars.append(src)
                    elif (al.asname or al.name) == head:
                        return self.lookup(src, ".".join([al.name] + rest), seen)
        if last is not None:
            return last, mod
        for src in stars:
            node, m = self.lookup(src, name, seen)
            if node is not None:
                return node, m
        return None, mod

    def literal(self, mod, e):
        """Value of a literal / pp_int(...) / module constant expression, else Ellipsis."""
        try:
            return ast.literal_eval(e)
        except (ValueError, TypeError, SyntaxError):
            pass
        if isinstance(e, ast.Call) and dotted(e.func) in ("pp_int", "int") and e.args:
            v = self.literal(mod, e.args[0])
            return int(v) if isinstance(v, (int, float)) else ...
        node, m = self.lookup(mod, dotted(e))
        return self.literal(m, node.value) if isinstance(node, ast.Assign) else ...


def access(n):
    """(dict expr, key expr, default expr | None | ...) for d[k], d.get(k, x), getter(d, k, x), k in d."""
    if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
        return n.value, n.slice, ...
    if isinstance(n, ast.Call) and n.args and getattr(n.func, "attr", None) == "get":
        return n.func.value, n.args[0], n.args[1] if len(n.args) > 1 else None
    if isinstance(n, ast.Call) and dotted(n.func) in GETTERS and len(n.args) >= 2:
        return n.args[0], n.args[1], n.args[2] if len(n.args) > 2 else ...
    if isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.In, ast.NotIn)):
        c = n.comparators[0]
        return (c.func.value if isinstance(c, ast.Call) and getattr(c.func, "attr", "") == "keys" else c), n.left, ...
    return None


def dict_reads(repo, path, roots):
    """Keys read from the user's config dict in one file: {"a.b": default | None | ...}."""
    mod = path[:-3].replace("/", ".").removesuffix(".__init__")
    tree, out = repo.module(mod), {}
    names, rets = {r: () for r in roots}, {}

    def key(e):
        v = repo.literal(mod, e)
        return v if isinstance(v, str) else None

    def dpath(e):
        if dotted(e) in names:
            return names[dotted(e)]
        acc = access(e) if not isinstance(e, ast.Compare) else None
        if acc:
            p, k = dpath(acc[0]), key(acc[1])
            return p + (k,) if p is not None and k else None
        if isinstance(e, ast.Call) and dotted(e.func) in ("copy.copy", "copy.deepcopy", "dict") and e.args:
            return dpath(e.args[0])
        return rets.get(dotted(e.func)) if isinstance(e, ast.Call) else None

    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name not in DEAD_HELPERS]
    for _ in range(3):  # flow-insensitive fixpoint: `x = <sub-dict>` and `return <sub-dict>`
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and dotted(n.targets[0]) not in (None, *roots):
                if dpath(n.value) is not None:
                    names[dotted(n.targets[0])] = dpath(n.value)
        for f in funcs:
            for r in ast.walk(f):
                if isinstance(r, ast.Return) and r.value is not None and dpath(r.value):
                    rets[f.name] = dpath(r.value)
    calls = {}  # helpers such as get_sparse_attention_mode(param_dict) get a sub-dict: re-root them
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.args and dpath(n.args[0]) is not None:
            calls.setdefault(n.func.id, set()).add(dpath(n.args[0]))
    for f in [None] + funcs:
        saved = dict(names)
        if f is not None and f.args.args and f.args.args[0].arg in roots and len(calls.get(f.name, ())) == 1:
            names[f.args.args[0].arg] = next(iter(calls[f.name]))
        body = f.body if f else [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))]
        for n in (x for st in body for x in ast.walk(st)):
            acc = access(n)
            p, k = (dpath(acc[0]), key(acc[1])) if acc else (None, None)
            if p is not None and k:
                d = acc[2] if acc[2] in (None, ...) else repo.literal(mod, acc[2])
                full = ".".join(p + (k,))
                if out.get(full, ...) is ... or d is not ...:
                    out[full] = d
        names.clear()
        names.update(saved)
    return out


def pydantic_fields(repo, mod, cls, prefix, keys, seen=()):
    node, mod = repo.lookup(mod, cls)
    if not isinstance(node, ast.ClassDef) or cls in seen:
        return
    for b in node.bases:
        if dotted(b) not in ("DeepSpeedConfigModel", "BaseModel"):
            pydantic_fields(repo, mod, dotted(b), prefix, keys, seen + (cls,))
    for st in node.body:
        if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)) or st.target.id.startswith("_"):
            continue
        name, ann, val, info = st.target.id, st.annotation, st.value, {}
        if isinstance(ann, ast.Subscript) and dotted(ann.value) in ("Optional", "typing.Optional"):
            ann, info["nullable"] = ann.slice, True
        if isinstance(val, ast.Call) and dotted(val.func) in ("Field", "pydantic.Field"):
            kw = {k.arg: k.value for k in val.keywords}
            if "alias" in kw:
                info["aliases"] = [repo.literal(mod, kw["alias"])]
            ex = kw.get("json_schema_extra")
            ex = dict(zip([repo.literal(mod, k) for k in ex.keys], ex.values)) if isinstance(ex, ast.Dict) else {}
            if "deprecated" in ex and repo.literal(mod, ex["deprecated"]) is True:
                info["deprecated"] = True
            if "new_param" in ex:
                info["replaced_by"] = repo.literal(mod, ex["new_param"])
            info.update({b: repo.literal(mod, kw[b]) for b in ("ge", "le", "gt", "lt") if b in kw})
            val = val.args[0] if val.args else kw.get("default")
            if val is None and "default_factory" in kw:
                val = ast.Call(func=kw["default_factory"], args=[], keywords=[])
        tname, (tnode, tmod) = ast.unparse(ann), repo.lookup(mod, dotted(ann))
        if isinstance(tnode, ast.ClassDef) and any("Enum" in ast.unparse(b) for b in tnode.bases):
            vals = [repo.literal(tmod, s.value) for s in tnode.body if isinstance(s, ast.Assign)]
            info["choices"] = list(dict.fromkeys(v for v in vals if v is not ...))
            tname = type_of(info["choices"][0]) if info["choices"] else "str"
        elif isinstance(tnode, ast.ClassDef):
            pydantic_fields(repo, tmod, tnode.name, f"{prefix}.{name}", keys, seen + (cls,))
            tname = "object"
        info = {"type": tname, **info}
        default = repo.literal(mod, val) if val is not None else (None if info.get("nullable") else ...)
        if default is not ...:
            info["default"] = default
        elif val is not None:
            info["default_expr"] = ast.unparse(val)
        keys[f"{prefix}.{name}"] = info


def pipeline_keys(repo, gd, ref):
    """Defaults of get_pipeline_config() and every `...pipeline['k']` / `.pipeline.get('k')` in deepspeed/."""
    fn, _ = repo.lookup("deepspeed.runtime.config", "get_pipeline_config")
    defaults = ast.literal_eval(next(s.value for s in fn.body if isinstance(s, ast.Assign)))
    reads, pat = {}, r"pipeline(?:\[|\.get\()['\"](\w+)['\"]"
    for line in git(gd, "grep", "-n", "-E", pat.replace("?:", ""), ref, "--", "deepspeed").splitlines():
        _, path, lno, text = line.split(":", 3)
        for k in re.findall(pat, text):
            reads.setdefault(k, []).append(f"{path}:{lno}")
    return defaults, reads


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--ref", default="master")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    repo, keys = Repo(a.git_dir, a.ref), {}
    for path, roots in DICT_FILES.items():
        for k, d in dict_reads(repo, path, roots).items():
            info = keys.setdefault(k, {"type": TYPE_HINTS.get(k) or type_of(d) or "unknown", "read_in": []})
            info["read_in"] += [path] if path not in info["read_in"] else []
            if d is not ... and not isinstance(d, dict) and "default" not in info:
                info["default"] = d
    for prefix, mod, cls in PYDANTIC:
        model = {}
        pydantic_fields(repo, mod, cls, prefix, model)
        for k, v in model.items():
            keys[k] = {**v, "model": cls, "read_in": keys.get(k, {}).get("read_in", [])}
        keys.setdefault(prefix, {"type": "object", "read_in": []})["model"] = cls
    defaults, reads = pipeline_keys(repo, a.git_dir, a.ref)
    for k in sorted(set(defaults) | set(reads)):
        keys[f"pipeline.{k}"] = {"type": type_of(defaults.get(k)) or "bool", "read_in": reads.get(k, []),
                                 **({"default": defaults[k]} if k in defaults else {})}
    for k, v in keys.items():  # a key with sub-keys is a JSON object
        if any(o.startswith(k + ".") for o in keys):
            v["type"] = "object"
            v.pop("default", None)
    keys = {k: {kk: vv for kk, vv in v.items() if vv != []} for k, v in sorted(keys.items())}
    commit = git(a.git_dir, "rev-parse", f"{a.ref}^{{commit}}").strip()
    doc = {"framework": "deepspeed", "ref": a.ref, "commit": commit,
           "commit_date": git(a.git_dir, "log", "-1", "--format=%cs", commit).strip(),
           "extracted_by": SELF, "sources": sorted(DICT_FILES) + sorted({m for _, m, _ in PYDANTIC}),
           "keys": keys, "read_by_nothing": sorted(f"pipeline.{k}" for k in defaults if k not in reads)}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{a.out}: {len(keys)} keys, read_by_nothing={doc['read_by_nothing']}, {a.ref} {commit[:12]}")


if __name__ == "__main__":
    main()
