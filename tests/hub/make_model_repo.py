#!/usr/bin/env python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a small, valid safetensors model repo that olah 0.5.4 (offline mode) serves like the Hub.

Layout olah expects (see docs/hf_model.md, "test mirror"):
  <mirrors>/models/<org>/<name>/            non-bare git repo; LFS files are committed as pointer files
  <mirrors>/models/<org>/<name>/.git/lfs/objects/<h0:2>/<h2:4>/<sha256>   LFS content
  <repos>/api/models/<org>/<name>/revision/<sha>/meta_head.json           seeds model_info() offline

Two commits on `main`, the first tagged `v1`: the second rewrites one shard and config.json, so tests can
exercise a revision update that re-downloads only what changed. Pure Python (no git-lfs, no torch).
With --config-dir, one commit of the *.json files (and chat_template.jinja) of a directory instead (a config-only repo, as a profile
generator reads one). Prints a JSON manifest (commits, files with size and sha256) on stdout.
"""
from __future__ import absolute_import, division, print_function

import argparse
import hashlib
import json
import os
import random
import struct
import subprocess
import sys
import time

GIT_ENV = {
    "GIT_AUTHOR_NAME": "llmops test",
    "GIT_AUTHOR_EMAIL": "test@localhost",
    "GIT_COMMITTER_NAME": "llmops test",
    "GIT_COMMITTER_EMAIL": "test@localhost",
    # Ignore the machine's git config (a system-wide git-lfs filter would rewrite our pointer files).
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo, *args):
    env = dict(os.environ, **GIT_ENV)
    return subprocess.run(["git", "-C", repo] + list(args), check=True, env=env,
                          stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()


def safetensors_bytes(tensors, rng):
    """tensors: list of (name, rows, cols) in BF16. Returns the file content."""
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, rows, cols in tensors:
        size = rows * cols * 2
        header[name] = {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)  # the format pads the header to 8 bytes with spaces
    return struct.pack("<Q", len(blob)) + blob + rng.randbytes(offset)


def lfs_pointer(sha, size):
    return "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (sha, size)


def build(args):
    org, name = args.repo.split("/")
    repo = os.path.join(args.mirrors, "models", org, name)
    if os.path.exists(repo):
        sys.exit("refusing to overwrite %s" % repo)
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    rng = random.Random(args.seed)
    layers_per_shard = 2
    cols = 1024
    # Rows per tensor so that a shard is ~shard_mb MiB (2 tensors of BF16).
    rows = max(1, (args.shard_mb * 1024 * 1024) // (layers_per_shard * cols * 2))
    manifest = {"repo_id": args.repo, "commits": []}

    def write_lfs(path, data):
        sha = hashlib.sha256(data).hexdigest()
        obj = os.path.join(repo, ".git", "lfs", "objects", sha[0:2], sha[2:4], sha)
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        with open(obj, "wb") as f:
            f.write(data)
        with open(os.path.join(repo, path), "w") as f:
            f.write(lfs_pointer(sha, len(data)))
        return {"size": len(data), "sha256": sha, "lfs": True}

    def write_plain(path, text):
        data = text.encode()
        full = os.path.join(repo, path)
        os.makedirs(os.path.dirname(full) or repo, exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
        return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "lfs": False}

    files = {}
    if args.config_dir:
        # A config-only repo (what a model-profile generator reads): the JSON files (and chat_template.jinja) of a
        # real checkpoint, verbatim.
        for entry in sorted(os.listdir(args.config_dir)):
            if entry.endswith(".json") or entry == "chat_template.jinja":
                with open(os.path.join(args.config_dir, entry)) as f:
                    files[entry] = write_plain(entry, f.read())
        files["README.md"] = write_plain("README.md", "# %s\n\nConfig-only test repo for llmops.inference.\n" % args.repo)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "config only")
        manifest["commits"].append({"sha": git(repo, "rev-parse", "HEAD"), "ref": "main", "files": files})
        return seed_meta(args, org, name, repo, manifest)
    files[".gitattributes"] = write_plain(".gitattributes", "*.safetensors filter=lfs diff=lfs merge=lfs -text\n")
    weight_map = {}
    shard_names = ["model-%05d-of-%05d.safetensors" % (i + 1, args.shards) for i in range(args.shards)]
    for i, shard in enumerate(shard_names):
        tensors = [("model.layers.%d.mlp.weight" % (i * layers_per_shard + j), rows, cols) for j in range(layers_per_shard)]
        files[shard] = write_lfs(shard, safetensors_bytes(tensors, rng))
        for t in tensors:
            weight_map[t[0]] = shard
    total = sum(files[s]["size"] for s in shard_names)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    files["model.safetensors.index.json"] = write_plain("model.safetensors.index.json", json.dumps(index, indent=2) + "\n")
    config = {"architectures": ["TestForCausalLM"], "model_type": "llmops-test", "num_hidden_layers": args.shards * layers_per_shard,
              "torch_dtype": "bfloat16", "revision_note": "v1"}
    files["config.json"] = write_plain("config.json", json.dumps(config, indent=2) + "\n")
    files["README.md"] = write_plain("README.md", "# %s\n\nGenerated test model for llmops.inference.\n" % args.repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "v1")
    git(repo, "tag", "v1")
    manifest["commits"].append({"sha": git(repo, "rev-parse", "HEAD"), "ref": "v1", "files": json.loads(json.dumps(files))})

    if args.commits > 1:
        # v2: one shard re-generated (same tensors, new values) and the config changed; the rest identical.
        i = min(1, args.shards - 1)
        tensors = [("model.layers.%d.mlp.weight" % (i * layers_per_shard + j), rows, cols) for j in range(layers_per_shard)]
        files[shard_names[i]] = write_lfs(shard_names[i], safetensors_bytes(tensors, rng))
        config["revision_note"] = "v2"
        files["config.json"] = write_plain("config.json", json.dumps(config, indent=2) + "\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "v2")
        manifest["commits"].append({"sha": git(repo, "rev-parse", "HEAD"), "ref": "main", "files": files})

    return seed_meta(args, org, name, repo, manifest)


def seed_meta(args, org, name, repo, manifest):
    # olah answers model_info()/repo_info() offline only from its cache: seed one entry per commit.
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    for commit in manifest["commits"]:
        meta_dir = os.path.join(args.repos_path, "api", "models", org, name, "revision", commit["sha"])
        os.makedirs(meta_dir, exist_ok=True)
        with open(os.path.join(meta_dir, "meta_head.json"), "w") as f:
            json.dump({"sha": commit["sha"], "lastModified": now}, f)
    manifest["path"] = repo
    return manifest


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mirrors", required=True, help="olah mirrors-path")
    p.add_argument("--repos-path", required=True, help="olah repos-path (cache), for the meta_head.json seed")
    p.add_argument("--repo", default="llmops-test/tiny-model")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--shard-mb", type=int, default=2)
    p.add_argument("--commits", type=int, default=2, choices=(1, 2))
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--config-dir", help="make a config-only repo of the *.json files and chat_template.jinja of this "
                   "directory (one commit)")
    args = p.parse_args()
    json.dump(build(args), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
