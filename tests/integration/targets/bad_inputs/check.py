# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The refusals of both runs of the bad_inputs target, case by case (see runme.sh)."""

import json
import os
import re
import sys

import yaml


def flat(text):
    return re.sub(r'\s+', ' ', text or '')


def deploy_messages(path):
    """host -> message of the failed task of the deploy's validation (json callback)."""
    with open(path) as handle:
        text = handle.read()
    data = json.loads(text[text.index('{'):])
    out = {}
    for play in data['plays']:
        for task in play['tasks']:
            for host, result in task['hosts'].items():
                if result.get('failed') and host not in out:
                    out[host] = result.get('msg', '')
    return out


def main(root, out):
    with open(os.path.join(root, 'tests', 'fixtures', 'bad_inputs.yml')) as handle:
        cases = yaml.safe_load(handle)['cases']
    deploy = deploy_messages(os.path.join(out, 'deploy.json'))
    failures = []
    for case in cases:
        host = {'proxmox': 'pve-', 'gateway': 'gw-'}.get(case.get('host'), 'ct-') + case['id']
        with open(os.path.join(out, 'plan', host, 'deployment.json')) as handle:
            planned = json.load(handle)
        plan_msg = flat(planned.get('refusal'))
        deploy_msg = flat(deploy.get(host))
        for label, message in (('make plan', plan_msg), ('deploy', deploy_msg)):
            missing = [text for text in case['expect'] if text not in message]
            if missing or 'Fix: ' not in message:
                failures.append('%s, case %s (%s): missing %s in %r' % (label, case['id'], host, missing, message))
        if plan_msg != deploy_msg:
            failures.append('case %s: make plan and the deploy refuse differently:\n  plan:   %s\n  deploy: %s'
                            % (case['id'], plan_msg, deploy_msg))
        if case.get('host') not in ('proxmox', 'gateway') and os.path.exists(os.path.join(out, 'plan', host, 'files')):
            failures.append('case %s: make plan rendered a unit for a refused host' % case['id'])
    for failure in failures:
        print(failure, file=sys.stderr)
    print('bad_inputs: %d cases, each refused by make plan and by the deploy with the same message; %d failures'
          % (len(cases), len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
