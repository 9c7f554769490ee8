#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: monitoring_config
short_description: Build the Prometheus scrape config, the alert and recording rules and the Grafana dashboard of the SGLang servers
version_added: 0.2.0
description:
  - An action that runs on the controller only, contacts no host and writes nothing. It reads the resolved
    C(llmops_deployment) of every host of O(hosts) and returns the Prometheus configuration (a scrape job of every
    SGLang server, labelled C(llmops_host) and C(llmops_instance)), the rules file (a recording group and one alert
    group per server with its thresholds written in) and a Grafana dashboard, as data and as the text of the files.
  - Every metric name is the pinned SGLang release's, by meaning (C(llmops_deployment.metrics.names), from
    C(profiles/sglang_releases.yml)); the action refuses to return a rule or dashboard query that names anything
    else.
  - Thresholds left C(null) come from each server's plan - the queue-depth alert fires when more requests wait than
    the server's C(max_running_requests), the accept-length alert when MTP accepts less than half the model
    profile's expected accept length (no such alert without MTP).
  - Refuses, naming the variable, the value, the rule and the fix, a host without a resolved deployment, two servers
    at one address, an unknown threshold or alert, a value of the wrong kind, and a release without metric names.
    A server with C(llmops_enable_metrics=false) or one the deploy would refuse is left out with a warning.
  - The role M(llmops.inference.monitoring) wraps it (render and install); use the role.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  hosts:
    description: Inventory hosts of the SGLang servers to scrape (each with C(llmops_deployment) resolved).
    type: list
    elements: str
    required: true
  target_addresses:
    description: Host to C(address:port) Prometheus scrapes, where the default (the bind address, or C(ansible_host) for a wildcard bind) is not reachable.
    type: dict
    default: {}
  thresholds:
    description:
      - Alert thresholds (C(kv_cache_usage), C(queue_depth), C(retractions), C(ttft_p99_seconds), C(itl_p99_seconds),
        C(accept_length_min), C(http_5xx_ratio)); C(null) or absent is the default or the plan's value.
    type: dict
    default: {}
  alert_for:
    description: Alert (C(down), C(kv_cache_usage), ...) to its C(for:) duration.
    type: dict
    default: {}
  rate_window:
    description: Range of the C(rate()) and C(increase()) of the rules.
    type: str
    default: 5m
  scrape_interval:
    description: Global scrape interval.
    type: str
    default: 15s
  evaluation_interval:
    description: Global rule evaluation interval.
    type: str
    default: 15s
  rules_path:
    description: Absolute path of the rules file on the Prometheus host (listed in C(rule_files)).
    type: str
    default: /etc/prometheus/rules/llmops-sglang.rules.yml
  extra_rule_files:
    description: More C(rule_files) entries.
    type: list
    elements: str
    default: []
  extra_scrape_configs:
    description: More Prometheus C(scrape_configs) entries (each with a C(job_name)), appended as given - e.g. the gateway's.
    type: list
    elements: dict
    default: []
  extra_rule_groups:
    description: More rule groups (C({name, rules})) appended to the rules file.
    type: list
    elements: dict
    default: []
  alertmanagers:
    description: Alertmanager C(host:port) addresses (C(alerting) section); empty leaves it out.
    type: list
    elements: str
    default: []
  dashboard_title:
    description: Title of the Grafana dashboard.
    type: str
    default: SGLang servers (llmops.inference)
  dashboard_uid:
    description: uid of the Grafana dashboard (40 characters at most).
    type: str
    default: llmops-sglang
  job_name:
    description: Prometheus job of the SGLang servers.
    type: str
    default: sglang
"""

EXAMPLES = r"""
- name: Build the monitoring files of every SGLang server
  llmops.inference.monitoring_config:
    hosts: "{{ groups['sglang_servers'] }}"
    thresholds:
      ttft_p99_seconds: 20
  register: monitoring
"""

RETURN = r"""
targets:
  description: The servers scraped, C({host, target, labels}).
  returned: always
  type: list
  elements: dict
thresholds:
  description: Host to threshold to C({value, source}); C(value) null means that alert is not rendered for the host.
  returned: always
  type: dict
notes:
  description: Servers left out or reachable only from themselves, and why (also printed as warnings).
  returned: always
  type: list
  elements: str
names:
  description: Meaning to metric name of the pinned release (what the files use).
  returned: always
  type: dict
prometheus_config:
  description: prometheus.yml as data.
  returned: always
  type: dict
rules:
  description: The rules file as data (C(groups)).
  returned: always
  type: dict
dashboard:
  description: The Grafana dashboard as data (null without servers).
  returned: always
  type: dict
prometheus_yml:
  description: Text of prometheus.yml.
  returned: always
  type: str
rules_yml:
  description: Text of the rules file.
  returned: always
  type: str
dashboard_json:
  description: Text of the dashboard JSON (null without servers).
  returned: always
  type: str
summary_md:
  description: A Markdown summary - targets, every alert with its threshold, the threshold's source and C(for), warnings.
  returned: always
  type: str
sglang_version:
  description: The SGLang release whose metric names the files use.
  returned: always
  type: str
"""
