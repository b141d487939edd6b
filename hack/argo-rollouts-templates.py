#!/usr/bin/env python3
"""Write every AnalysisTemplate and ClusterAnalysisTemplate of an Argo Rollouts checkout's
docs/, examples/ and test/e2e/ (YAML files, Markdown code blocks, Go raw strings) as one
fixture file each, the group rewritten to okra.mumo.co:

    hack/argo-rollouts-templates.py ARGO_ROLLOUTS_GIT_DIR test/fixtures/argo-rollouts-templates
"""

import os
import re
import subprocess
import sys

repo, dest = sys.argv[1], sys.argv[2]
os.makedirs(dest, exist_ok=True)
commit = subprocess.run(
    ["git", "-C", repo, "rev-parse", "--short=9", "HEAD"], capture_output=True, text=True
).stdout.strip()
files = subprocess.run(
    ["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True
).stdout.split()
n = 0
for f in files:
    if not re.match(r"^(docs|examples|test/e2e)/", f):
        continue
    if not re.search(r"\.(ya?ml|md|go)$", f):
        continue
    text = subprocess.run(
        ["git", "-C", repo, "show", f"HEAD:{f}"], capture_output=True, text=True
    ).stdout
    if "AnalysisTemplate" not in text:
        continue
    if f.endswith(".md"):
        chunks = [m.group(1) for m in re.finditer(r"```ya?ml\n(.*?)```", text, re.S)]
    elif f.endswith(".go"):
        chunks = [m.group(1) for m in re.finditer(r"`(\n[^`]*?)`", text, re.S)]
    else:
        chunks = [text]
    k = 0
    for c in chunks:
        for d in re.split(r"^---[ \t]*$", c, flags=re.M):
            if not re.search(r"^kind:\s*(Cluster)?AnalysisTemplate\s*$", d, re.M):
                continue
            k += 1
            body = d.strip("\n")
            body = re.sub(
                r"^apiVersion:\s*argoproj\.io/v1alpha1\s*$",
                "apiVersion: okra.mumo.co/v1alpha1",
                body,
                flags=re.M,
            )
            base = f.replace("/", "--").rsplit(".", 1)[0]
            name = f"{base}--{k}.yaml"
            header = (
                f"# Argo Rollouts {f} (argoproj/argo-rollouts@{commit}, Apache License 2.0),\n"
                f"# template {k} of the file, as written; "
                "only the group is rewritten to okra.mumo.co.\n"
            )
            with open(os.path.join(dest, name), "w", encoding="utf-8") as out:
                out.write(header + body + "\n")
            n += 1
print(n)
