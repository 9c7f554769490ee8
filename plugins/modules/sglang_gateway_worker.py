#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sglang_gateway_worker
short_description: Drain a worker out of the SGLang Model Gateway, or register it and wait until it is healthy
version_added: 0.1.0
description:
  - Talks to the control plane of the SGLang Model Gateway (C(smg) 1.13.0, C(/workers)) with its API key.
  - O(state=drained) refuses first when fewer than O(min_serving) other workers are healthy (the swap would leave too
    few), then sends C(DELETE /workers/<id>) (the gateway stops routing to the worker at once and forgets it
    C(drain_settle_secs) later, whatever is still in flight), waits until the gateway no longer lists it, then until
    the worker itself reports no request in flight (SGLang's C(/v1/loads), or the gauges O(inflight_metrics) of its
    C(/metrics)). A worker the gateway does not list is only waited for.
  - O(state=present) registers the worker with C(POST /workers) (its API key included, so the gateway's requests
    and health checks authenticate) unless it is listed, and waits until the gateway reports it C(ready) and healthy.
  - Runs where both the gateway and the worker are reachable (the gateway's host).
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: In check mode the gateway is only read (GET /workers); the result says what would be done.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
options:
  gateway_url:
    description: Base URL of the gateway as seen from where the module runs, e.g. C(http://127.0.0.1:30080).
    type: str
    required: true
  worker_url:
    description: The worker's URL exactly as the gateway knows it (C(llmops_deployment.replicas[].url)).
    type: str
    required: true
  api_key:
    description: The gateway's API key (also the worker's); sent as C(Authorization Bearer).
    type: str
    default: ""
  state:
    description: C(drained) (out of rotation, nothing in flight) or C(present) (registered and healthy).
    type: str
    choices: [drained, present]
    required: true
  min_serving:
    description: O(state=drained) refuses when fewer other workers than this are healthy and routable.
    type: int
    default: 1
  inflight_path:
    description: Path of the worker's load answer (SGLang's C(/v1/loads)); used when O(inflight_metrics) is empty.
    type: str
    default: /v1/loads?include=core
  inflight_fields:
    description: Fields of each C(loads[]) entry whose sum is the worker's requests in flight.
    type: list
    elements: str
    default: [num_running_reqs, num_waiting_reqs]
  inflight_metrics:
    description:
      - Prometheus gauges of the worker's C(/metrics) whose sum is its requests in flight, for a server without
        C(/v1/loads) (llama.cpp - C(llamacpp:requests_processing), C(llamacpp:requests_deferred)).
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds to wait for the drain, or for the worker to become healthy.
    type: int
    default: 1800
  poll_interval:
    description: Seconds between polls.
    type: float
    default: 1.0
"""

EXAMPLES = r"""
- name: Take a replica out of rotation and wait until it finished its requests
  llmops.inference.sglang_gateway_worker:
    gateway_url: "{{ llmops_deployment.http.url }}"
    worker_url: http://10.0.0.11:30000
    api_key: "{{ llmops_api_key }}"
    state: drained
    min_serving: 1
  no_log: false

- name: Put it back and wait until the gateway routes to it
  llmops.inference.sglang_gateway_worker:
    gateway_url: "{{ llmops_deployment.http.url }}"
    worker_url: http://10.0.0.11:30000
    api_key: "{{ llmops_api_key }}"
    state: present
"""

RETURN = r"""
worker:
  description: The gateway's entry of the worker at the end (C(null) once drained).
  returned: always
  type: dict
serving_others:
  description: URLs of the other healthy, routable workers when the module started.
  returned: always
  type: list
  elements: str
drain:
  description: O(state=drained) - seconds until the gateway forgot it (C(gateway_seconds)) and until the worker had
    nothing in flight (C(seconds)); the most requests the gateway had in flight to it (C(max_gateway_load)); the
    worker's in-flight count at each poll (C(worker_inflight)).
  returned: when state is drained
  type: dict
register:
  description: O(state=present) - C(seconds) until healthy and the statuses seen.
  returned: when state is present
  type: dict
"""

import json
import time
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.llmops.inference.plugins.module_utils.sglang import gateway_workers as gw


class Client(object):
    def __init__(self, module):
        self.module = module
        key = module.params['api_key']
        self.headers = {'Content-Type': 'application/json'}
        if key:
            self.headers['Authorization'] = 'Bearer %s' % key

    def call(self, method, url, body=None):
        """(status, text); a connection error is status 0."""
        data = json.dumps(body).encode() if body is not None else None
        try:
            response = open_url(url, data=data, method=method, headers=self.headers, timeout=30,
                                follow_redirects='none')
            return response.getcode(), response.read().decode('utf-8', 'replace')
        except HTTPError as exc:
            return exc.code, exc.read().decode('utf-8', 'replace')
        except (URLError, OSError, ValueError) as exc:
            return 0, str(exc)

    def json(self, method, url, body=None, ok=(200,)):
        status, text = self.call(method, url, body)
        if status not in ok:
            self.module.fail_json(msg='%s %s answered %s: %s' % (method, url, status or 'no connection', text[:400]),
                                  status=status)
        try:
            return json.loads(text) if text else None
        except ValueError:
            self.module.fail_json(msg='%s %s: not JSON: %s' % (method, url, text[:400]))


def listing(client, base):
    answer = client.json('GET', base + '/workers')
    try:
        gw.workers_of(answer)
    except ValueError as exc:
        client.module.fail_json(msg=str(exc))
    return answer


def worker_inflight(client, params):
    """The worker's own count of requests in flight, or (None, why)."""
    base = params['worker_url'].rstrip('/')
    if params['inflight_metrics']:
        status, text = client.call('GET', base + '/metrics')
        if status != 200:
            return None, 'GET /metrics answered %s' % (status or 'no connection')
        try:
            return gw.inflight_from_metrics(text, params['inflight_metrics']), None
        except ValueError as exc:
            return None, str(exc)
    status, text = client.call('GET', base + params['inflight_path'])
    if status != 200:
        return None, 'GET %s answered %s' % (params['inflight_path'], status or 'no connection')
    try:
        return gw.inflight_from_loads(json.loads(text), params['inflight_fields']), None
    except ValueError as exc:
        return None, str(exc)


def drain(module, client, base, start_listing):
    params = module.params
    deadline = time.time() + params['timeout']
    worker = gw.find_worker(start_listing, params['worker_url'])
    result = dict(gateway_seconds=0.0, max_gateway_load=0, worker_inflight=[], seconds=0.0)
    started = time.time()
    if worker is not None:
        client.json('DELETE', '%s/workers/%s' % (base, worker['id']), ok=(200, 202, 204))
        result['max_gateway_load'] = worker.get('load') or 0
        while True:
            status, text = client.call('GET', '%s/workers/%s' % (base, worker['id']))
            if status == 404:
                break
            if status == 200:
                result['max_gateway_load'] = max(result['max_gateway_load'], json.loads(text).get('load') or 0)
            if time.time() > deadline:
                module.fail_json(msg='the gateway still lists %s %d s after DELETE (last answer %s: %s)'
                                 % (params['worker_url'], params['timeout'], status, text[:200]), drain=result)
            time.sleep(params['poll_interval'])
        result['gateway_seconds'] = round(time.time() - started, 1)
    while True:
        count, why = worker_inflight(client, params)
        result['worker_inflight'].append(count)
        if count == 0:
            break
        if count is None and why and 'no connection' in why:
            break  # nothing listens: nothing is in flight there
        if count is None:
            module.fail_json(msg='cannot tell whether %s finished its requests: %s (set inflight_metrics for a '
                                 'server without SGLang\'s /v1/loads)' % (params['worker_url'], why), drain=result)
        if time.time() > deadline:
            module.fail_json(msg='%s still has %d request(s) in flight after %d s'
                             % (params['worker_url'], count, params['timeout']), drain=result)
        time.sleep(params['poll_interval'])
    result['seconds'] = round(time.time() - started, 1)
    return result


def register(module, client, base, start_listing):
    params = module.params
    deadline = time.time() + params['timeout']
    started, seen = time.time(), []
    if gw.find_worker(start_listing, params['worker_url']) is None:
        body = {'url': params['worker_url']}
        if params['api_key']:
            body['api_key'] = params['api_key']
        client.json('POST', base + '/workers', body, ok=(200, 201, 202))
    while True:
        worker = gw.find_worker(listing(client, base), params['worker_url'])
        status = worker.get('status') if worker else 'not listed'
        if not seen or seen[-1] != status:
            seen.append(status)
        if gw.is_serving(worker):
            return worker, dict(seconds=round(time.time() - started, 1), statuses=seen)
        if time.time() > deadline:
            module.fail_json(msg='the gateway does not report %s healthy %d s after registering it (statuses seen: %s)'
                             % (params['worker_url'], params['timeout'], ' -> '.join(seen)), worker=worker)
        time.sleep(params['poll_interval'])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gateway_url=dict(type='str', required=True),
            worker_url=dict(type='str', required=True),
            api_key=dict(type='str', default='', no_log=True),
            state=dict(type='str', required=True, choices=['drained', 'present']),
            min_serving=dict(type='int', default=1),
            inflight_path=dict(type='str', default='/v1/loads?include=core'),
            inflight_fields=dict(type='list', elements='str', default=['num_running_reqs', 'num_waiting_reqs']),
            inflight_metrics=dict(type='list', elements='str', default=[]),
            timeout=dict(type='int', default=1800),
            poll_interval=dict(type='float', default=1.0),
        ),
        supports_check_mode=True,
    )
    params = module.params
    client = Client(module)
    base = params['gateway_url'].rstrip('/')
    start = listing(client, base)
    worker = gw.find_worker(start, params['worker_url'])
    others = gw.serving_others(start, params['worker_url'])
    result = dict(changed=False, worker=worker, serving_others=others)
    if params['state'] == 'drained':
        if worker is not None and len(others) < params['min_serving']:
            module.fail_json(msg='refusing to drain %s: only %d other worker(s) are healthy (%s), at least %d must keep '
                                 'serving' % (params['worker_url'], len(others), ', '.join(others) or 'none',
                                              params['min_serving']), **result)
        result['changed'] = worker is not None
        if module.check_mode:
            module.exit_json(**result)
        result['drain'] = drain(module, client, base, start)
        result['worker'] = None
    else:
        result['changed'] = not gw.is_serving(worker)
        if module.check_mode or not result['changed']:
            module.exit_json(**result)
        result['worker'], result['register'] = register(module, client, base, start)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
