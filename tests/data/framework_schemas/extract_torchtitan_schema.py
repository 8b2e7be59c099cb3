#!/usr/bin/env python3
"""Extract torchtitan's training-config schema from a git ref, statically (stdlib only).

  python3 extract_torchtitan_schema.py --git-dir <torchtitan.git> --ref v0.2.2 --out torchtitan-v0.2.2.json
  python3 extract_torchtitan_schema.py --git-dir <torchtitan.git> --ref main --baseline-ref v0.2.2 \
      --out torchtitan-main.json

Files are read with `git show` and parsed with `ast`; nothing is imported. Refs that still have
torchtitan/config/job_config.py (<= v0.2.2) are walked from `JobConfig` ("format": "toml"); newer
refs from `Trainer.Config` in torchtitan/trainer.py ("format": "python": --module/--config).
"""
import argparse, ast, json, subprocess

SELF = "tests/data/framework_schemas/extract_torchtitan_schema.py"
# v0.2.2 key -> newer key (commit, note). Used only where both keys exist in the two trees.
RENAMES = {
    **{o: (n, "9810191", "") for o, n in (
        ("job.dump_folder", "dump_folder"), ("job.print_config", "debug.print_config"),
        ("job.save_config_file", "debug.save_config_file"), ("model.hf_assets_path", "hf_assets_path"),
        ("model.converters", "model_converters.converters"), ("training.dataset", "dataloader.dataset"),
        ("model.print_after_conversion", "model_converters.print_after_conversion"),
        ("training.dataset_path", "dataloader.dataset_path"), ("validation.enable", "validator.enable"),
        ("validation.freq", "validator.freq"), ("validation.steps", "validator.steps"))},
    "training.local_batch_size": ("training.num_tokens_per_microbatch_per_dp_rank", "73aed7f6c",
                                  "sequences -> tokens per PP microbatch per DP rank: = pipeline_parallel_"
                                  "microbatch_size * seq_len (= local_batch_size * seq_len without PP)"),
    "training.global_batch_size": ("training.num_tokens_per_train_step", "73aed7f6c",
                                   "sequences -> tokens: = global_batch_size * seq_len; -1 = one grad-accum step"),
    "training.seq_len": ("training.max_context_length", "73aed7f6c", ""),
    "parallelism.pipeline_parallel_microbatch_size": ("parallelism.num_pp_microbatches", "73aed7f6c",
                                                      "size -> count: = local_batch_size / microbatch_size"),
    "parallelism.enable_async_tensor_parallel": ("compile.enable_async_tensor_parallel", "737594746", ""),
    "activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns": (
        "activation_checkpoint.force_recompute_mm_shapes_by_fqns", "c5d93d109", "SelectiveAC.Config"),
    "activation_checkpoint.memory_budget": ("activation_checkpoint.memory_budget", "c5d93d109", "MemoryBudgetAC"),
}
for _k in ("enable_profiling", "save_traces_folder", "profile_freq", "profiler_active", "profiler_warmup",
           "enable_memory_snapshot", "save_memory_snapshot_folder"):
    RENAMES[f"profiling.{_k}"] = (f"profiler.{_k}", "de7fc7bd0", "ProfilingConfig -> Profiler.Config")
# v0.2.2 keys that became Python objects/arguments in the config function instead of a key.
MOVED = {
    "model.name": "--module <model> picks torchtitan.models.<model>.config_registry; ModelSpec.name",
    "model.flavor": "model_spec=model_registry('<flavor>') (torchtitan.models.<model>.model_registry)",
    "model.converters": "model_registry(flavor, converters=[Float8LinearConverter.Config(...)]) (6348d93d1)",
    "quantize.linear.float8.recipe_name": "Float8LinearConverter.Config.recipe_name: rowwise|rowwise_with_gw_hp",
    "quantize.linear.float8.filter_fqns": "Float8LinearConverter.Config.filter_fqns",
    "quantize.linear.float8.emulate": "Float8LinearConverter.Config.emulate",
    "activation_checkpoint.mode": "class of activation_checkpoint: SelectiveAC.Config() | FullAC.Config() | "
                                  "MemoryBudgetAC.Config() | None (c5d93d109)",
    "job.config_file": "--module <python module> --config <function name> (9810191)",
    "optimizer.lr": "optimizer=default_adamw(lr=...) -> OptimizersContainer.Config.param_groups",
    "training.dataset": "dataloader=GrainDataLoader.Config(dataset=...) (1b04fc1c3)",
}
# Config classes a config module instantiates besides the Trainer.Config defaults.
EXTRA_CLASSES = [("torchtitan.components.quantization", c + ".Config") for c in (
    "Float8LinearConverter", "MXFP8LinearConverter", "NVFP4LinearConverter",
    "Float8GroupedExpertsConverter", "MXFP8GroupedExpertsConverter")] + [
    ("torchtitan.components.data", "GrainDataLoader.Config"), ("torchtitan.components.loss",
     "ChunkedLossWrapper.Config"), ("torchtitan.components.optimizer", "ParamGroupConfig")]


def git(gd, *a):
    return subprocess.run(["git", "--git-dir", gd, *a], check=True, capture_output=True, text=True).stdout


def dotted(e):
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        d = dotted(e.value)
        return d and f"{d}.{e.attr}"
    return None


class Repo:
    def __init__(self, gd, ref):
        self.gd, self.ref, self.mods = gd, ref, {}

    def show(self, path):
        try:
            return git(self.gd, "show", f"{self.ref}:{path}")
        except subprocess.CalledProcessError:
            return None

    def module(self, name):
        if name not in self.mods:
            srcs = [self.show(name.replace(".", "/") + s) for s in (".py", "/__init__.py")]
            self.mods[name] = next((ast.parse(s) for s in srcs if s is not None), None)
        return self.mods[name]

    def lookup(self, mod, name):
        """Resolve a dotted name inside module `mod`, following `from ... import`."""
        head, *rest = name.split(".")
        for st in getattr(self.module(mod), "body", []):
            if isinstance(st, ast.ClassDef) and st.name == head:
                for part in rest:
                    st = next((s for s in st.body if isinstance(s, ast.ClassDef) and s.name == part), None)
                    if st is None:
                        break
                return st, mod
            tgts = st.targets if isinstance(st, ast.Assign) else [getattr(st, "target", None)]
            if isinstance(st, (ast.Assign, ast.AnnAssign, ast.FunctionDef)) and not rest and (
                    getattr(st, "name", None) == head or any(dotted(t) == head for t in tgts if t)):
                return st, mod
            if isinstance(st, ast.ImportFrom):
                for al in st.names:
                    if (al.asname or al.name) != head:
                        continue
                    src = st.module or ""
                    if st.level:
                        pkg = mod.split(".")
                        if self.show(mod.replace(".", "/") + "/__init__.py") is None:
                            pkg = pkg[:-1]
                        src = ".".join(pkg[:len(pkg) - st.level + 1] + ([st.module] if st.module else []))
                    node, m = self.lookup(src, ".".join([al.name] + rest))
                    if node is None and rest and self.module(f"{src}.{al.name}") is not None:
                        return self.lookup(f"{src}.{al.name}", ".".join(rest))
                    return node, m
        return None, mod


def type_info(ann):
    info = {}
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        ann = ast.parse(ann.value, mode="eval").body
    if isinstance(ann, ast.Subscript) and dotted(ann.value) in ("Annotated", "typing.Annotated"):
        if any("Suppress" in ast.unparse(x) for x in ann.slice.elts[1:]):
            info["cli"] = False  # tyro.conf.Suppress: settable only from Python, not --section.key
        ann = ann.slice.elts[0]
    members, stack = [], [ann]
    while stack:
        a = stack.pop()
        if isinstance(a, ast.BinOp) and isinstance(a.op, ast.BitOr):
            stack += [a.right, a.left]
        elif isinstance(a, ast.Constant) and a.value is None:
            info["nullable"] = True
        else:
            members.append(a)
    names = [ast.unparse(m) for m in members]
    if set(names) == {"float", "int"}:
        names, members = ["float"], members[:1]
    m = members[0] if members else None
    if isinstance(m, ast.Subscript) and dotted(m.value) in ("Literal", "typing.Literal"):
        ch = [ast.literal_eval(x) for x in (m.slice.elts if isinstance(m.slice, ast.Tuple) else [m.slice])]
        info["type"] = "str" if all(isinstance(c, str) for c in ch) else type(ch[0]).__name__
        info["choices"] = ch
    else:
        info["type"] = names[0] if names else "None"
    if len(names) > 1:
        info["union"] = names
    return info


def is_dataclass(node):
    return isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list)


def class_fields(repo, node, mod):
    out = {}
    for b in node.bases:  # inherited fields first, e.g. ActivationCheckpointing.Config
        bn, bm = repo.lookup(mod, dotted(b) or "")
        if isinstance(bn, ast.ClassDef):
            out.update(class_fields(repo, bn, bm))
    for st in node.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            if "ClassVar" not in ast.unparse(st.annotation) and not st.target.id.startswith("_"):
                out[st.target.id] = (st.annotation, st.value, mod)
    return out


def variants_of(repo, ann, mod):
    """`X = Annotated[A.Config, tyro.conf.subcommand("a")] | ...` -> {"a": "A.Config", ...}."""
    node, m = repo.lookup(mod, dotted(ann) or "")
    if not isinstance(node, ast.Assign):
        return None, m
    res, stack = {}, [node.value]
    while stack:
        a = stack.pop()
        if isinstance(a, ast.BinOp):
            stack += [a.right, a.left]
        elif isinstance(a, ast.Subscript) and dotted(a.value) == "Annotated":
            cls, *meta = a.slice.elts
            name = next((c.args[0].value for c in meta if isinstance(c, ast.Call) and c.args), None)
            res[name] = None if isinstance(cls, ast.Constant) else dotted(cls)
    return res, m


def walk(repo, node, mod, prefix, keys, sections, variant=None):
    for name, (ann, val, fmod) in class_fields(repo, node, mod).items():
        key, info, default = prefix + name, type_info(ann), ...
        if variant:
            info["variant"] = variant
        if isinstance(val, ast.Call) and dotted(val.func) in ("field", "dataclasses.field"):
            kw = {k.arg: k.value for k in val.keywords}
            df, val = kw.get("default_factory"), kw.get("default")
            if isinstance(df, ast.Lambda):
                val = df.body
            elif dotted(df) in ("list", "dict"):
                default = [] if dotted(df) == "list" else {}
            elif df is not None:
                cls, cmod = repo.lookup(fmod, dotted(df) or "")
                if not is_dataclass(cls):
                    info["default_expr"] = ast.unparse(df) + "()"
                    keys[key] = info
                    continue
                sections[key] = {"class": dotted(df), "module": cmod, "declared": ast.unparse(ann)}
                var, vmod = variants_of(repo, ann, fmod)
                if var:
                    sections[key]["variants"] = var
                walk(repo, cls, cmod, key + ".", keys, sections, variant)
                for vname, vcls in (var or {}).items():
                    vnode, vm = repo.lookup(vmod, vcls) if vcls and vcls != dotted(df) else (None, None)
                    if vnode is not None:
                        sub = {}
                        walk(repo, vnode, vm, key + ".", sub, sections, vname)
                        for k, v in sub.items():
                            keys.setdefault(k, v)
                continue
        if default is ... and val is not None:
            try:
                default = ast.literal_eval(val)
            except ValueError:
                cn, _ = repo.lookup(fmod, dotted(val) or "")  # module-level constant, e.g. PROFILE_DIR
                try:
                    default = ast.literal_eval(cn.value) if isinstance(cn, ast.Assign) else ...
                except ValueError:
                    pass
                if default is ...:
                    info["default_expr"] = ast.unparse(val)
        if default is not ...:
            info["default"] = list(default) if isinstance(default, tuple) else default
        keys[key] = info


def models(repo, python_fmt):
    """{model: [flavors]} from train_spec (model_args=<dict>) or model_registry (<dict>[flavor])."""
    out, params, names = {}, {}, []
    for st in getattr(repo.module("torchtitan.models"), "body", []):
        if isinstance(st, ast.Assign) and dotted(st.targets[0]) == "_supported_models":
            names = sorted(ast.literal_eval(st.value.args[0]))
    for m in names:
        mod, dname = f"torchtitan.models.{m}", None
        for n in ast.walk(repo.module(mod) or ast.Module(body=[])):
            if not python_fmt and isinstance(n, ast.keyword) and n.arg == "model_args":
                dname = dotted(n.value)
            if python_fmt and isinstance(n, ast.FunctionDef) and n.name == "model_registry":
                params[m] = [a.arg for a in n.args.args + n.args.kwonlyargs]
                dname = next((dotted(s.value) for s in ast.walk(n)
                              if isinstance(s, ast.Subscript) and dotted(s.slice) == "flavor"), None)
        node, _ = repo.lookup(mod, dname) if dname else (None, None)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            out[m] = [ast.literal_eval(k) for k in node.value.keys]
    return out, params


def config_functions(repo):
    """Public functions usable as --config, per --module (model shorthands and torchtitan_recipes)."""
    out = {}
    for p in git(repo.gd, "ls-tree", "-r", "--name-only", repo.ref, "torchtitan/models", "torchtitan_recipes").split():
        if p.endswith("/config_registry.py") or (p.startswith("torchtitan_recipes/") and p.endswith(".py")):
            fns = [s.name for s in ast.parse(repo.show(p)).body
                   if isinstance(s, ast.FunctionDef) and not s.name.startswith("_")]
            if fns:
                out[p[:-3].replace("/", ".").removesuffix(".__init__")] = fns
    return out


def extract(gd, ref):
    repo = Repo(gd, ref)
    python_fmt = repo.show("torchtitan/config/job_config.py") is None
    mod, root = ("torchtitan.trainer", "Trainer.Config") if python_fmt else ("torchtitan.config.job_config", "JobConfig")
    node, m = repo.lookup(mod, root)
    keys, sections = {}, {}
    walk(repo, node, m, "", keys, sections)
    commit = git(gd, "rev-parse", f"{ref}^{{commit}}").strip()
    doc = {"framework": "torchtitan", "ref": ref, "commit": commit,
           "commit_date": git(gd, "log", "-1", "--format=%cs", commit).strip(),
           "source": mod.replace(".", "/") + ".py", "root": root, "extracted_by": SELF,
           "format": "python" if python_fmt else "toml", "keys": keys, "sections": sections}
    doc["models"], params = models(repo, python_fmt)
    if python_fmt:
        doc["model_registry_params"] = params
        doc["config_functions"] = config_functions(repo)
        doc["classes"] = {}
        for cmod, cname in EXTRA_CLASSES:
            cn, cm = repo.lookup(cmod, cname)
            if is_dataclass(cn):
                fields = {}
                walk(repo, cn, cm, "", fields, {})
                doc["classes"][cname] = {"module": cm, "fields": fields}
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--baseline-ref", help="TOML-era ref to diff against (renamed/moved/removed/added)")
    a = ap.parse_args()
    doc = extract(a.git_dir, a.ref)
    if a.baseline_ref:
        old, new = extract(a.git_dir, a.baseline_ref)["keys"], doc["keys"]
        ren = {o: n for o, (n, _, _) in RENAMES.items() if o in old and n in new}
        doc["baseline_ref"] = a.baseline_ref
        doc["renamed"] = {o: n for o, n in ren.items() if o != n}
        doc["renamed_notes"] = {o: {"commit": c, "note": t} for o, (_, c, t) in RENAMES.items() if o in ren}
        doc["moved"] = {o: t for o, t in MOVED.items() if o in old and o not in new and o not in ren}
        doc["removed"] = sorted(k for k in old if k not in new and k not in ren and k not in doc["moved"])
        doc["added"] = sorted(k for k in new if k not in old and k not in ren.values())
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{a.out}: {len(doc['keys'])} keys, {len(doc['models'])} models, {doc['ref']} {doc['commit'][:12]}")


if __name__ == "__main__":
    main()
