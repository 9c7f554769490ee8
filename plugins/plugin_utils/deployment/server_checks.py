# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server-side checks of one deployment: model source and destination, GPUs, container placement, choices.

PRIVATE to the collection. Pure functions over the coerced settings (deployment_inputs.read) and the profiles;
each adds its refusals to the host's Problems and returns what it resolved. Used by deployment.resolve_server.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import model_revision
from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest, pick
from ansible_collections.llmops.inference.plugins.module_utils.sglang.flags import gpus_per_node
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import NOVALUE
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.hosts import container_cpuset, numa_cpus

REPO = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$')
REVISION = re.compile(r'^[A-Za-z0-9._/-]{1,255}$')
COMMIT = re.compile(r'^[0-9a-f]{40}$')
INSTANCE = re.compile(r'^[A-Za-z0-9_.-]{1,64}$')
# Printable ASCII: the environment file quotes it for systemd; a control character or a non-ASCII one cannot
# travel in an HTTP header as is, and servers trim a header value's outer blanks.
API_KEY = re.compile(r'^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$')
_VARIANT = re.compile(r'^[A-Za-z0-9_.-]{1,64}$')


def source_of(sources, name, fallback):
    src = sources.get(name, 'default')
    return src if src in ('inventory', 'override') else fallback


def norm_path(value):
    return posixpath.normpath(value) if value else value


def under(path, roots):
    for root in roots:
        root = norm_path(root).rstrip('/') or '/'
        if root == '/' or path == root or path.startswith(root + '/'):
            return root
    return None


def release_choices(release, key):
    return (release.get('choices') or {}).get(key)


def check_release_choice(problems, release, name, value, key, extra=(), where=''):
    """A value the pinned release's own argparse must accept (skipped when the table has no list for it)."""
    if value is None or value in extra:
        return
    choices = release_choices(release, key)
    if not choices or value in choices:
        return
    close = nearest(value, choices)
    problems.add(name, value, '%snot one of the %s choices of SGLang %s (%s)' % (where, key, release['version'],
                 ', '.join(choices)), 'use %r (nearest)' % close if close else 'use one of them')


def model_path(settings, repo_id, revision, problems):
    """The checkpoint directory: llmops_model_path as given, else one directory per revision under llmops_model_dir."""
    path = settings['llmops_model_path']
    if path:
        return norm_path(path), 'llmops_model_path'
    base = settings['llmops_model_dir']
    if not base:
        problems.add('llmops_model_dir', NOVALUE, 'is required (where the checkpoint goes on the server)',
                     'set llmops_model_dir (e.g. /srv/models) or llmops_model_path')
        return None, 'llmops_model_dir'
    return norm_path(posixpath.join(base, model_revision.directory_name(repo_id, revision))), 'llmops_model_dir'


def check_model(ctx, settings, model, problems):
    repo_id = settings['llmops_model_repo_id'] or model.get('hf_repo')
    if not repo_id:
        problems.add('llmops_model_repo_id', NOVALUE, 'no repository: the profile has no hf_repo',
                     'set llmops_model_repo_id to org/name')
    elif not REPO.match(repo_id) or '--' in repo_id or '..' in repo_id:
        problems.add('llmops_model_repo_id' if settings['llmops_model_repo_id'] else 'models/%s.yml.hf_repo'
                     % settings['llmops_model_profile'], repo_id, 'must be a Hugging Face repository id org/name '
                     '(letters, digits, . _ -)', 'e.g. Qwen/Qwen3.5-122B-A10B')
    requested = revision = settings['llmops_model_revision'] or model.get('hf_revision') or 'main'
    if not REVISION.match(revision) or '..' in revision:
        problems.add('llmops_model_revision', revision, 'must be a 40-hex commit sha, a branch or a tag',
                     'pin the commit you verified, e.g. llmops_model_revision: <40 lower-case hex digits>')
    elif re.match(r'^[0-9a-fA-F]{40}$', revision) and not COMMIT.match(revision):
        problems.add('llmops_model_revision', revision, 'a commit sha is lower-case hex on the Hub',
                     'use %s' % revision.lower())
    rev = model_revision.resolve(ctx['host'], repo_id, requested, ctx.get('model_lock'), ctx.get('model_commit'),
                                 ctx.get('model_lock_file'))
    revision = rev['revision']
    path, path_var = model_path(settings, repo_id, revision, problems)
    forbidden = settings['llmops_forbidden_paths'] or []
    for index, root in enumerate(forbidden):
        if not str(root).startswith('/'):
            problems.add('llmops_forbidden_paths[%d]' % index, root, 'must be an absolute path', 'e.g. /data')
    if path is not None:
        if not path.startswith('/') or path.count('/') < 2:
            problems.add(path_var, settings[path_var] or path, 'must be absolute and at least two levels deep (the '
                         'directory is replaced as a whole)', 'set %s to an absolute path such as %s' % (
                             path_var, '/srv/models' if path_var == 'llmops_model_dir' else '/srv/models/<name>'))
        else:
            hit = under(path, [r for r in forbidden if str(r).startswith('/')])
            if hit:
                problems.add(path_var, settings[path_var] or path, 'the model would go to %s, under the forbidden '
                             'path %s (llmops_forbidden_paths; after normalising the path)' % (path, hit),
                             'set %s outside %s, e.g. /shared/models' % (path_var, hit))
    served = pick(settings['llmops_served_model_name'], model.get('served_model_name'), path)
    if served and ':' in str(served):
        problems.add('llmops_served_model_name', served, "SGLang reserves ':' for LoRA adapters (model:adapter)",
                     'use %s' % str(served).replace(':', '-'))
    return dict(profile=settings['llmops_model_profile'], repo_id=repo_id, revision=revision,
                requested_revision=requested, revision_is_commit=rev['is_commit'], revision_source=rev['source'],
                lock=dict(file=rev['lock_file'], write=rev['write'], note=rev['note']),
                path=path, served_model_name=served,
                forbidden_paths=list(forbidden), weights_bytes=model.get('weights_bytes'))


def check_draft(settings, model, model_facts, problems):
    """The draft checkpoint of an EAGLE-3 profile (serving.speculative.draft) on the server: repository, revision and
    the directory beside the target's (<dir>/<name>@<revision>), or None without one. hf_model downloads it like the
    target (playbooks/deploy.yml); a branch is resolved at every run (only the target's revision is locked)."""
    draft = ((model.get('serving') or {}).get('speculative') or {}).get('draft')
    if not isinstance(draft, dict):
        return None
    where = 'models/%s.yml.serving.speculative.draft' % settings['llmops_model_profile']
    repo_id = draft.get('hf_repo')
    if not isinstance(repo_id, str) or not REPO.match(repo_id) or '--' in repo_id or '..' in repo_id:
        problems.add(where + '.hf_repo', repo_id if repo_id is not None else NOVALUE, 'must be the Hugging Face '
                     'repository id org/name of the draft checkpoint', 'e.g. AngelSlim/Qwen3-32B_eagle3', kind='profile')
        return None
    revision = draft.get('hf_revision') or 'main'
    if not REVISION.match(revision) or '..' in revision or (re.match(r'^[0-9a-fA-F]{40}$', revision)
                                                            and not COMMIT.match(revision)):
        problems.add(where + '.hf_revision', revision, 'must be a 40-hex lower-case commit sha, a branch or a tag',
                     'pin the draft commit you verified', kind='profile')
        return None
    target = model_facts.get('path')
    path = None
    if target:
        base = settings['llmops_model_dir'] or posixpath.dirname(target)
        path = norm_path(posixpath.join(base, model_revision.directory_name(repo_id, revision)))
        if path == target:
            problems.add(where + '.hf_repo', repo_id, 'the draft would go to the target\'s own directory %s' % path,
                         'use the draft\'s own repository', kind='profile')
        hit = under(path, [r for r in (settings['llmops_forbidden_paths'] or []) if str(r).startswith('/')])
        if hit:
            problems.add('llmops_model_dir' if settings['llmops_model_dir'] else 'llmops_model_path', path,
                         'the EAGLE-3 draft would go to %s, under the forbidden path %s (llmops_forbidden_paths)'
                         % (path, hit), 'put the model directory outside %s' % hit)
    is_commit = bool(COMMIT.match(revision))
    return dict(repo_id=repo_id, revision=revision, revision_is_commit=is_commit, path=path,
                note=None if is_commit else (
                    'the EAGLE-3 draft %s@%s is a branch: hf_model resolves it to a commit at every run and the '
                    'lock file pins the target only; pin the draft commit in the profile\'s '
                    'serving.speculative.draft.hf_revision' % (repo_id, revision)))


def check_gpus(ctx, settings, tp, problems, nnodes=1):
    indices = settings['llmops_gpu_indices'] or []
    bad = [i for i in indices if i < 0]
    if bad:
        problems.add('llmops_gpu_indices', indices, 'nvidia-smi indices are >= 0', 'list the indices nvidia-smi shows')
    if len(set(indices)) != len(indices):
        problems.add('llmops_gpu_indices', indices, 'each GPU index once', 'remove the duplicates')
    per_node = gpus_per_node(tp, nnodes) if tp is not None else None
    if indices and nnodes > 1 and per_node is not None and len(indices) != per_node:
        problems.add('llmops_gpu_indices', indices, 'TP %d over %d nodes needs exactly %d GPU indices on each node'
                     % (tp, nnodes, per_node), 'list %d distinct indices of this node' % per_node)
    elif indices and tp is not None and nnodes == 1 and len(indices) != tp:
        problems.add('llmops_gpu_indices', indices, 'TP %d needs exactly %d GPU indices' % (tp, tp),
                     'list %d distinct indices, or set llmops_tp_size: %d' % (tp, len(indices)))
    return indices


def check_lxc(ctx, settings, tp, problems):
    host = settings['llmops_lxc_host']
    ctid, node = settings['llmops_lxc_ctid'], settings['llmops_lxc_numa_node']
    if not host:
        for name, value in (('llmops_lxc_ctid', ctid), ('llmops_lxc_numa_node', node)):
            if value is not None:
                problems.add(name, value, 'is set but llmops_lxc_host is not (a bare-metal server has no container)',
                             'set llmops_lxc_host to the Proxmox host of the container, or remove %s' % name)
        return None
    proxmox = (ctx.get('groups') or {}).get('proxmox_hosts') or []
    if host not in proxmox:
        close = nearest(host, proxmox)
        problems.add('llmops_lxc_host', host, 'not a host of the group proxmox_hosts (%s)' % (', '.join(proxmox) or
                     'the group is empty'), 'use %s' % close if close else 'add the Proxmox host to proxmox_hosts')
    invalid = [n for n, s in (ctx.get('sources') or {}).items() if s == 'invalid']
    if ctid is None and 'llmops_lxc_ctid' not in invalid:
        problems.add('llmops_lxc_ctid', NOVALUE, 'a container needs its VMID', 'set llmops_lxc_ctid (e.g. 101)')
    if node is None and 'llmops_lxc_numa_node' not in invalid:
        problems.add('llmops_lxc_numa_node', NOVALUE, "a container needs the NUMA node whose GPUs it gets",
                     'set llmops_lxc_numa_node')
    pve = ctx.get('lxc_vars')
    if pve is not None and node is not None:
        nvidia = pve.get('llmops_host_nvidia_numa_nodes') or []
        vfio = pve.get('llmops_host_vfio_numa_nodes') or []
        if node in vfio:
            problems.add('llmops_lxc_numa_node', node, 'NUMA node %d of %s goes to vfio-pci (llmops_host_vfio_numa_nodes '
                         '%s): its GPUs are unbound from nvidia for the VMs' % (node, host, vfio),
                         'use a node of llmops_host_nvidia_numa_nodes %s' % nvidia)
        elif node not in nvidia:
            problems.add('llmops_lxc_numa_node', node, 'NUMA node %d is not in llmops_host_nvidia_numa_nodes %s of %s'
                         % (node, nvidia, host), 'use one of %s, or add %d there' % (nvidia, node))
        cards = [g for g in (pve.get('llmops_host_gpus') or []) if isinstance(g, dict) and g.get('numa_node') == node]
        if tp is not None and pve.get('llmops_host_gpus') and len(cards) < tp:
            problems.add('llmops_lxc_numa_node', node, 'NUMA node %d of %s has %d GPU(s), TP %d needs %d'
                         % (node, host, len(cards), tp, tp), 'lower llmops_tp_size or use another node')
    addresses, cpuset = _container_gpus(ctx, settings, host, node, problems)
    return dict(host=host, ctid=ctid, numa_node=node, addresses=addresses, cpuset=cpuset)


def _container_gpus(ctx, settings, host, node, problems):
    """(the container's GPU addresses, its cpuset) from its Proxmox host's llmops_host_gpus / llmops_host_numa_cpus
    and its lxc_gpu_addresses / lxc_gpu_cpuset; refuses GPU indices the container does not have.

    The container gets /dev/nvidiaN of exactly these GPUs, and CUDA inside numbers the GPUs it can open 0..n-1 in bus
    order whatever their host minors: an index >= n in CUDA_VISIBLE_DEVICES names no GPU of the container."""
    pve, role = ctx.get('lxc_vars'), ctx.get('lxc_role') or {}
    if pve is None or node is None:
        return [], None
    known = dict((g.get('address'), g.get('numa_node')) for g in (pve.get('llmops_host_gpus') or [])
                 if isinstance(g, dict))
    extra = [a for a in (role.get('lxc_gpu_addresses') or []) if isinstance(a, str)]
    addresses = sorted(set([a for a, n in known.items() if n == node] + extra))
    indices = settings['llmops_gpu_indices'] or []
    beyond = [i for i in indices if isinstance(i, int) and i >= len(addresses)]
    if known and addresses and beyond:
        problems.add('llmops_gpu_indices', indices, 'the container gets %d GPU(s) of %s (%s), passed through as their '
                     '/dev/nvidiaN nodes, which CUDA inside numbers 0-%d whatever their minors on the host: '
                     'CUDA_VISIBLE_DEVICES=%s names %s, which the container does not have'
                     % (len(addresses), host, ', '.join(addresses) or 'none', len(addresses) - 1,
                        ','.join(str(i) for i in indices), ', '.join(str(i) for i in beyond)),
                     'use indices 0-%d (e.g. %s), or give the container those GPUs (llmops_lxc_numa_node, '
                     'lxc_gpu_addresses)' % (len(addresses) - 1, list(range(min(len(indices), len(addresses))))))
    given = pve.get('llmops_host_numa_cpus') if isinstance(pve.get('llmops_host_numa_cpus'), dict) else None
    node_cpus, invalid = numa_cpus(given)
    nodes = sorted(set(known[a] for a in addresses if isinstance(known.get(a), int)))
    # null is '' to the role too (no cpuset lines).
    requested = role.get('lxc_gpu_cpuset', 'auto')
    requested = '' if requested is None else str(requested)
    cpuset, refusal = container_cpuset(requested, node_cpus, nodes, host)
    # auto with an invalid entry in the map: the Proxmox host's own resolution refuses that entry.
    if refusal and not (requested == 'auto' and invalid):
        problems.add('lxc_gpu_cpuset', requested, refusal[0], refusal[1])
    return addresses, cpuset


def facts_of_host(ctx, settings):
    pve = ctx.get('lxc_vars')
    if pve is not None:
        return dict(sev_snp=bool(pve.get('llmops_host_sev_snp')), nccl_p2p_trusted=pve.get('llmops_nccl_p2p_trusted'))
    return dict(sev_snp=bool(settings['llmops_host_sev_snp']), nccl_p2p_trusted=settings['llmops_nccl_p2p_trusted'])


def speculative_of(settings, serving, sources):
    spec = serving.get('speculative') or {}
    draft = settings['llmops_speculative_num_draft_tokens']
    draft_source = source_of(sources, 'llmops_speculative_num_draft_tokens', 'profile')
    if draft is None:
        draft = spec.get('num_draft_tokens') or 0
        draft_source = 'profile' if spec else 'sglang default'
    steps = settings['llmops_speculative_num_steps']
    steps_source = source_of(sources, 'llmops_speculative_num_steps', 'profile')
    if steps is None:
        steps = spec.get('num_steps')
        steps_source = 'profile' if steps is not None else 'sglang default'
    return int(draft), steps, draft_source, steps_source
