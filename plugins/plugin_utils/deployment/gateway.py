# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Resolve an SGLang Model Gateway host: its replicas, their worker URLs, the gateway's command line and unit values.

PRIVATE to the collection. ``resolve_gateway(ctx)`` returns ``(deployment, problems)`` with the
``kind: sglang_gateway`` object of docs/deployment_resolver.md. The replicas are read from the servers' own variables (the
same ``llmops_*`` names their own resolution reads), so the worker list is decided here once: ``make plan``, the
gateway's unit and the rolling swap all take it from ``llmops_deployment.replicas``.

ctx: host, settings (deployment_inputs.read of the gateway host), groups, replica_settings ({name: settings of that
server}), served_names ({name: the served model name its profile gives, or None}), gateway_profile (the parsed
profiles/sglang_gateway.yml or None), profiles_dir, api_key, require_secrets, problems.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import posixpath

from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import NOVALUE, Problems

SCHEMA = 1
LAUNCHER = '/usr/local/libexec/llmops/smg-launch'
WILDCARDS = ('0.0.0.0', '::', '[::]', '')
LOOPBACK = ('127.0.0.1', 'localhost', '::1', '[::1]')
# systemd waits this much longer than the gateway's own drain before it kills it.
STOP_MARGIN_SECONDS = 30


def _url_host(address):
    return '[%s]' % address if ':' in address and not address.startswith('[') else address


def worker_url(address, port):
    return 'http://%s:%d' % (_url_host(address), port)


def _replica_names(settings, groups, problems):
    servers = list(groups.get('sglang_servers') or [])
    wanted = settings['llmops_gateway_replicas'] or servers
    if not wanted:
        problems.add('llmops_gateway_replicas', settings['llmops_gateway_replicas'],
                     'a gateway needs at least one replica and the inventory has no host in sglang_servers',
                     'put the SGLang servers in the group sglang_servers, or list them in llmops_gateway_replicas')
        return []
    out = []
    for name in wanted:
        if name not in servers:
            close = nearest(name, servers)
            problems.add('llmops_gateway_replicas', name, 'not a host of the group sglang_servers (%s)'
                         % (', '.join(servers) or 'empty'), 'use %s' % close if close else
                         'add the host to sglang_servers or remove it from the list')
        elif name in out:
            problems.add('llmops_gateway_replicas', name, 'listed twice', 'list each replica once')
        else:
            out.append(name)
    return out


def _replica(ctx, name, problems):
    rs = ctx['replica_settings'][name]
    port = rs['llmops_http_port']
    address = rs['llmops_gateway_worker_address'] or rs['llmops_http_host'] or ''
    if address in WILDCARDS:
        problems.add('%s: llmops_gateway_worker_address' % name, rs['llmops_gateway_worker_address'] or NOVALUE,
                     'the gateway needs an address it can connect to, and %s binds %r (llmops_http_host), which is '
                     'not one' % (name, rs['llmops_http_host']),
                     'set llmops_gateway_worker_address on %s to its address on the gateway\'s network' % name)
        return None
    if port is None:
        return None
    instance = rs['llmops_instance_name'] or rs['llmops_model_profile']
    served = rs['llmops_served_model_name'] or ctx['served_names'].get(name)
    return dict(host=name, url=worker_url(address, port), address=address, port=port, instance=instance,
                unit='sglang-%s.service' % instance if instance else None, served_model_name=served,
                model_profile=rs['llmops_model_profile'], loopback=address in LOOPBACK)


def _argv(settings, gateway, flags, workers, prometheus_host):
    def flag(key):
        return flags[key]['flag']

    argv = [flag('host'), settings['llmops_gateway_host'], flag('port'), str(settings['llmops_gateway_port']),
            flag('worker_urls')] + workers
    argv += [flag('policy'), settings['llmops_gateway_policy'],
             flag('health_check_interval'), str(settings['llmops_gateway_health_check_interval']),
             flag('health_check_timeout'), str(settings['llmops_gateway_health_check_timeout']),
             flag('health_failure_threshold'), str(settings['llmops_gateway_health_failure_threshold']),
             flag('health_success_threshold'), str(settings['llmops_gateway_health_success_threshold']),
             flag('health_check_endpoint'), flags['health_check_endpoint']['default']]
    retries = settings['llmops_gateway_retries']
    argv += [flags['retries']['disable']] if retries == 0 else [flag('retries'), str(retries)]
    breaker = settings['llmops_gateway_cb_failure_threshold']
    argv += [flags['cb_failure_threshold']['disable']] if breaker == 0 else [flag('cb_failure_threshold'), str(breaker)]
    argv += [flag('cb_timeout'), str(settings['llmops_gateway_cb_timeout']),
             flag('request_timeout'), str(settings['llmops_gateway_request_timeout']),
             flag('shutdown_grace'), str(settings['llmops_gateway_shutdown_grace']),
             flag('prometheus_host'), prometheus_host,
             flag('prometheus_port'), str(settings['llmops_gateway_prometheus_port'])]
    return argv + list(settings['llmops_gateway_extra_args'] or [])


def _check_settings(ctx, profile, problems):
    settings = ctx['settings']
    policies = profile.get('policies') or []
    if settings['llmops_gateway_policy'] not in policies:
        close = nearest(settings['llmops_gateway_policy'], policies)
        problems.add('llmops_gateway_policy', settings['llmops_gateway_policy'], 'not a --policy of smg %s (%s)'
                     % (profile.get('version'), ', '.join(policies)), "use %r" % close if close else 'use cache_aware')
    if settings['llmops_gateway_port'] == settings['llmops_gateway_prometheus_port']:
        problems.add('llmops_gateway_prometheus_port', settings['llmops_gateway_prometheus_port'],
                     'the same port as llmops_gateway_port: the metrics listener and the API cannot share it',
                     'give the metrics their own port, e.g. 29000')
    reserved = profile.get('reserved_flags') or []
    for arg in settings['llmops_gateway_extra_args'] or []:
        name = str(arg).split('=', 1)[0]
        if name in reserved:
            problems.add('llmops_gateway_extra_args', arg, 'the role renders or forbids %s (the API key comes from a '
                         'root-only credential file, the rest from their llmops_gateway_* variables)' % name,
                         'remove it and set the llmops_gateway_* variable instead')
    if not ctx.get('api_key') and not settings['llmops_allow_no_api_key'] and ctx.get('require_secrets', True):
        problems.add('llmops_api_key', NOVALUE, 'no API key: the gateway would serve every client and send no key to '
                     'the workers', 'export SGLANG_API_KEY (the key of the replicas) or set '
                     'llmops_allow_no_api_key: true', kind='secret')


def _check_replicas(ctx, replicas, problems):
    settings = ctx['settings']
    urls = {}
    for replica in replicas:
        if replica['url'] in urls:
            problems.add('%s: llmops_gateway_worker_address' % replica['host'], replica['url'],
                         'the same worker URL as %s' % urls[replica['url']],
                         'give each replica its own address or llmops_http_port')
        urls.setdefault(replica['url'], replica['host'])
        gateway_ports = (settings['llmops_gateway_port'], settings['llmops_gateway_prometheus_port'])
        if replica['host'] == ctx['host'] and replica['port'] in gateway_ports:
            problems.add('llmops_gateway_port', settings['llmops_gateway_port'], 'the replica on this host (%s) '
                         'serves on port %d' % (replica['host'], replica['port']), 'give the gateway another port')
    names = sorted(set(r['served_model_name'] for r in replicas if r['served_model_name']))
    if len(names) > 1:
        problems.add('llmops_served_model_name', names, 'the replicas of one gateway serve different model names '
                     '(%s): the gateway routes by name, so they are not replicas of one model'
                     % ', '.join('%s=%s' % (r['host'], r['served_model_name']) for r in replicas),
                     'give them one llmops_served_model_name, or put them behind separate gateways')
    batch = settings['llmops_gateway_swap_batch']
    if batch is not None and len(replicas) > 1 and batch >= len(replicas):
        problems.add('llmops_gateway_swap_batch', batch, 'the rolling swap would take all %d replicas out of '
                     'rotation at once' % len(replicas), 'use at most %d' % (len(replicas) - 1))


def _release(ctx, profile, problems):
    """The table entry of the smg release this gateway runs (llmops_gateway_version, else the pin ``version:``) with
    the table's shared keys, or None (refused) when it has no entry or no lock."""
    wanted = ctx['settings'].get('llmops_gateway_version')
    pin = str(profile.get('version'))
    version = str(wanted) if wanted else pin
    releases = profile.get('releases') or {}
    variable, value = ('llmops_gateway_version', wanted) if wanted else ('profiles/sglang_gateway.yml.version', pin)
    back = ('or remove llmops_gateway_version to use the pin %s' % pin) if wanted else 'or pin a release that has one'
    entry = releases.get(version)
    if entry is None:
        problems.add(variable, value, 'smg %s is not a supported gateway release: it has no entry under releases: '
                     'of profiles/sglang_gateway.yml (supported: %s)' % (version, ', '.join(sorted(releases)) or 'none'),
                     'name a supported release, or add this one (make gateway-release VERSION=%s; docs/upgrade.md), %s'
                     % (version, back), kind='release')
        return None
    lock = posixpath.join(ctx['profiles_dir'], entry.get('lock') or 'locks/smg-%s.txt' % version)
    if not entry.get('lock') or not os.path.isfile(lock):
        problems.add(variable, value, 'smg %s has an entry in profiles/sglang_gateway.yml but no pip lock (%s): a host '
                     'would install an unproved resolution' % (version, lock),
                     'generate its lock and report (make gateway-release VERSION=%s; docs/upgrade.md), %s'
                     % (version, back), kind='release')
        return None
    bad = [i for i in entry.get('known_issues') or [] if not (isinstance(i, dict) and i.get('text') and i.get('fix')
                                                              and isinstance(i.get('min_replicas', 0), int))]
    if bad or not isinstance(entry.get('known_issues') or [], list):
        problems.add(variable, value, 'profiles/sglang_gateway.yml: releases.%s.known_issues must be a list of '
                     '{min_replicas: <int>, text: <what goes wrong>, fix: <what to do>} (got %r)'
                     % (version, bad or entry.get('known_issues')),
                     'correct the entry in the profiles under llmops_profiles_dir', kind='profile')
        return None
    release = dict((k, v) for k, v in profile.items() if k not in ('releases', 'shared'))
    release.update(entry, version=version, lock=lock)
    return release


def resolve_gateway(ctx):
    problems = ctx.get('problems') or Problems(ctx['host'])
    settings = ctx['settings']
    profile = ctx.get('gateway_profile')
    if not profile:
        problems.add('llmops_profiles_dir', ctx.get('profiles_dir'), 'has no readable sglang_gateway.yml (the '
                     'gateway pin)', 'restore profiles/sglang_gateway.yml or point llmops_profiles_dir at a copy '
                     'that has it', kind='profile')
        return None, problems
    profile = _release(ctx, profile, problems)
    if profile is None:
        return None, problems
    _check_settings(ctx, profile, problems)
    names = _replica_names(settings, ctx['groups'], problems)
    replicas = [r for r in (_replica(ctx, name, problems) for name in names) if r]
    _check_replicas(ctx, replicas, problems)
    version = profile['version']
    venv = settings['llmops_gateway_venv'] or '/opt/smg/venv-%s' % version
    prometheus_host = settings['llmops_gateway_prometheus_host'] or settings['llmops_gateway_host']
    workers = [r['url'] for r in replicas]
    argv = _argv(settings, profile, profile['flags'], workers, prometheus_host)
    python = posixpath.join(venv, 'bin', 'python')
    # --key-required: the launcher refuses to start smg without the key (a credential systemd could not hand over
    # would otherwise leave the gateway open to every caller).
    command = [python, LAUNCHER] + (['--key-required'] if ctx.get('api_key') else []) + ['--'] + argv
    grace = settings['llmops_gateway_shutdown_grace']
    local_url = worker_url('127.0.0.1' if settings['llmops_gateway_host'] in WILDCARDS
                           else settings['llmops_gateway_host'], settings['llmops_gateway_port'])
    metrics_host = '127.0.0.1' if prometheus_host in WILDCARDS else prometheus_host
    warnings = ['%s: the gateway reaches replica %s at %s, a loopback address: that works only where they share a '
                'network namespace (the same host, or the lab)' % (ctx['host'], r['host'], r['url'])
                for r in replicas if r['loopback'] and r['host'] != ctx['host']]
    if len(replicas) == 1:
        warnings.append('%s: one replica (%s): a rolling swap of it is an outage; add a second replica for '
                        'zero-downtime swaps' % (ctx['host'], replicas[0]['host']))
    warnings.extend(_known_issues(ctx['host'], profile, len(replicas)))
    deployment = dict(
        schema=SCHEMA, kind='sglang_gateway', host=ctx['host'], unit='sglang-gateway.service',
        gateway=dict(package=profile['package'], version=version, venv=venv, python=python, launcher=LAUNCHER,
                     lock=profile['lock'], launcher_module=profile['launcher_module']),
        # The profiles the gateway was resolved from (releases/smg-<a>-to-<b>.json: the move report the role reads).
        profiles=dict(dir=ctx['profiles_dir']),
        http=dict(host=settings['llmops_gateway_host'], port=settings['llmops_gateway_port'], url=local_url,
                  readiness=profile['api']['readiness']),
        prometheus=dict(host=prometheus_host, port=settings['llmops_gateway_prometheus_port'],
                        url='%s/metrics' % worker_url(metrics_host, settings['llmops_gateway_prometheus_port'])),
        auth=dict(api_key_set=bool(ctx.get('api_key')), allow_no_api_key=bool(settings['llmops_allow_no_api_key'])),
        policy=settings['llmops_gateway_policy'],
        health=dict(interval=settings['llmops_gateway_health_check_interval'],
                    timeout=settings['llmops_gateway_health_check_timeout'],
                    failure_threshold=settings['llmops_gateway_health_failure_threshold'],
                    success_threshold=settings['llmops_gateway_health_success_threshold']),
        retries=settings['llmops_gateway_retries'],
        circuit_breaker=dict(failure_threshold=settings['llmops_gateway_cb_failure_threshold'],
                             timeout=settings['llmops_gateway_cb_timeout']),
        request_timeout=settings['llmops_gateway_request_timeout'],
        shutdown_grace=grace, timeout_stop_sec=grace + STOP_MARGIN_SECONDS,
        replicas=replicas, workers=workers,
        served_model_name=(replicas[0]['served_model_name'] if replicas else None),
        swap=dict(batch=settings['llmops_gateway_swap_batch'],
                  min_serving=max(0, len(replicas) - (settings['llmops_gateway_swap_batch'] or 1)),
                  drain_settle_secs=profile['api']['drain_settle_secs'],
                  worker_inflight=profile.get('worker_inflight') or {}),
        argv=argv, command=command, exec_start=' '.join(_quote(a) for a in command),
        notes=[], warnings=warnings)
    return deployment, problems


def _known_issues(host, profile, replicas):
    """Warnings of the release's known_issues (profiles/sglang_gateway.yml) that apply with this many replicas."""
    return ['%s: %s (fix: %s)' % (host, issue['text'], issue['fix']) for issue in profile.get('known_issues') or []
            if replicas >= (issue.get('min_replicas') or 0)]


def _quote(arg):
    """An argument for systemd's ExecStart= (double quotes where it has spaces or quotes; % doubled)."""
    arg = arg.replace('%', '%%')
    if arg and not any(c in arg for c in ' \t"\'\\;$'):
        return arg
    return '"%s"' % arg.replace('\\', '\\\\').replace('"', '\\"')
