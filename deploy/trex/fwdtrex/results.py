"""Results of every mode: a JSON document (everything, for machines) and a
Markdown table (the summary, for people), side by side under
bench-results/ (default bench-results/trex/<mode>-<profile>.{json,md}).
Both carry the exact command line and the versions: the TRex client
library, the TRex server (when connected), MLRsearch, and fwd."""

import json
import os
import platform
import shlex
from importlib import metadata


def default_base(repo_root, mode, profile_path):
    name = os.path.splitext(os.path.basename(profile_path))[0]
    return os.path.join(repo_root, "bench-results", "trex", f"{mode}-{name}")


def library_versions():
    out = {"python": platform.python_version()}
    for dist, key in (("lbr-trex-client", "trex_client"), ("MLRsearch", "mlrsearch")):
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    return out


def client_host():
    """The machine fwd-trex ran on (the TRex client's; the appliance's own
    is in its fwdctl status): name, CPU model, cores."""
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"name": platform.node(), "cpu": cpu, "cores": os.cpu_count()}


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v == int(v) and abs(v) >= 1000:
            return f"{int(v):,}"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.6g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown(title, doc, rows):
    """The Markdown page: title, command, versions, then `rows` (a list of
    dicts with the same keys) as a table."""
    lines = [f"# {title}", ""]
    cmd = doc.get("command")
    if cmd:
        lines += [f"Command: `{shlex.join(cmd) if isinstance(cmd, list) else cmd}`", ""]
    for k, v in sorted((doc.get("versions") or {}).items()):
        lines.append(f"- {k}: {_cell(v) or 'unknown'}")
    h = doc.get("client_host")
    if h:
        lines.append(f"- client host: {h.get('name')}, {h.get('cpu')}, {h.get('cores')} cores")
    if doc.get("versions") or h:
        lines.append("")
    if rows:
        keys = list(rows[0].keys())
        lines.append("| " + " | ".join(keys) + " |")
        lines.append("|" + "---|" * len(keys))
        for r in rows:
            lines.append("| " + " | ".join(_cell(r.get(k)) for k in keys) + " |")
        lines.append("")
    for note in doc.get("notes", []):
        lines.append(f"- {note}")
    return "\n".join(lines).rstrip("\n") + "\n"


def write(base, doc, rows, title):
    """Writes base.json (doc) and base.md (title + rows); their paths."""
    os.makedirs(os.path.dirname(os.path.abspath(base)), exist_ok=True)
    jpath, mpath = base + ".json", base + ".md"
    with open(jpath, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=False)
        f.write("\n")
    with open(mpath, "w") as f:
        f.write(markdown(title, doc, rows))
    return jpath, mpath
