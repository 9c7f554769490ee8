# Lab stand-in for Proxmox's qm (the lxc_gpu molecule scenario): config, status and set of a VM, on the VM's config
# file in Proxmox's format (/etc/pve/qemu-server/<vmid>.conf: description comments, the current keys sorted, then
# [PENDING], then snapshots; qemu-server's PVE::QemuServer::write_vm_config). What it prints is read back from that
# file and from the VM's state file, never from what a test expects. Every call is logged.
#   qm config <vmid> [--current]   the keys with the pending changes applied (--current: without), sorted, as
#                                  PVE/CLI/qm.pm prints them (the description is left out here)
#   qm status <vmid>               status: <state of /var/lib/qm-stub/<vmid>.status> (running, stopped)
#   qm set <vmid> --key value ...  a stopped VM's config takes them; a running VM's go to [PENDING] (hostpci cannot
#                                  be hot-plugged); --delete key[,key] removes keys the same way; a locked VM is
#                                  refused, as qm does
#   qm reboot|shutdown|start <vmid>  the state file changes; reboot and shutdown apply [PENDING] (a new QEMU process
#                                  starts from the config), as Proxmox does
# QM_STUB_ETC and QM_STUB_STATE move the two directories (tests outside the lab instance). Installed as
# /usr/local/sbin/qm with the instance's interpreter line prepended (prepare.yml); tests run it with their python.
import os
import re
import sys

ETC = os.environ.get('QM_STUB_ETC', '/etc/pve/qemu-server')
STATE = os.environ.get('QM_STUB_STATE', '/var/lib/qm-stub')
LOG = os.environ.get('QM_STUB_LOG', '/var/log/qm-stub.log')
PCIRE = r'(?:[a-f0-9]{4,}:)?[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?'
HOSTPCI = re.compile(r'^(?:(?:host=)?%s(?:;%s)*|mapping=[A-Za-z][A-Za-z0-9_-]*)(?:,[a-z-]+=[^,]+)*$' % (PCIRE, PCIRE))


def die(message, code=255):
    sys.stderr.write(message + '\n')
    sys.exit(code)


def read(vmid):
    path = os.path.join(ETC, '%s.conf' % vmid)
    if not os.path.exists(path):
        die("Configuration file 'nodes/lab/qemu-server/%s.conf' does not exist" % vmid, 2)
    comments, sections, order, name = [], {'': {}}, [''], ''
    with open(path) as handle:
        for line in handle.read().splitlines():
            if not line.strip():
                continue
            if line.startswith('#') and name == '' and not sections['']:
                comments.append(line)
            elif line.startswith('[') and line.endswith(']'):
                name = line[1:-1]
                sections[name] = {}
                order.append(name)
            else:
                key, value = line.split(':', 1)
                sections[name][key.strip()] = value.strip()
    return path, comments, sections, order


def write(path, comments, sections, order):
    out = list(comments)
    for name in order:
        if name:
            if not sections[name]:
                continue
            out += ['', '[%s]' % name]
        out += ['%s: %s' % (key, sections[name][key]) for key in sorted(sections[name])]
    with open(path + '.tmp', 'w') as handle:
        handle.write('\n'.join(out) + '\n')
    os.rename(path + '.tmp', path)


def state(vmid):
    try:
        with open(os.path.join(STATE, '%s.status' % vmid)) as handle:
            return handle.read().strip()
    except IOError:
        return 'stopped'


def config(vmid, current):
    dummy, dummy, sections, dummy = read(vmid)
    keys = dict(sections[''])
    if not current:
        pending = dict(sections.get('PENDING', {}))
        for key in pending.pop('delete', '').split(','):
            keys.pop(key.strip(), None)
        keys.update(pending)
    for key in sorted(keys):
        if key != 'digest':
            print('%s: %s' % (key, keys[key]))


def set_(vmid, args):
    path, comments, sections, order = read(vmid)
    if 'lock' in sections['']:
        die('VM is locked (%s)' % sections['']['lock'])
    if len(args) % 2:
        die('400 wrong number of arguments')
    running = state(vmid) == 'running'
    target = sections[''] if not running else sections.setdefault('PENDING', {})
    if running and 'PENDING' not in order:
        order.insert(1, 'PENDING')
    for flag, value in zip(args[::2], args[1::2]):
        key = flag.lstrip('-')
        if key == 'delete':
            for name in value.split(','):
                if running:
                    target['delete'] = ','.join(sorted(set(filter(None, target.get('delete', '').split(',') + [name]))))
                else:
                    target.pop(name.strip(), None)
            continue
        if re.match(r'^hostpci\d+$', key) and (int(key[7:]) > 15 or not HOSTPCI.match(value)):
            die("400 Parameter verification failed.\n%s: invalid format - value does not match the regex" % key)
        target[key] = value
    write(path, comments, sections, order)


def power(command, vmid):
    path, comments, sections, order = read(vmid)
    running = state(vmid) == 'running'
    if command in ('reboot', 'shutdown') and not running:
        die('VM %s not running' % vmid, 2)
    if command == 'start' and running:
        die('VM %s already running' % vmid, 2)
    if command in ('reboot', 'shutdown') and 'PENDING' in sections:
        pending = sections.pop('PENDING')
        order.remove('PENDING')
        for key in pending.pop('delete', '').split(','):
            sections[''].pop(key.strip(), None)
        sections[''].update(pending)
        write(path, comments, sections, order)
    if not os.path.isdir(STATE):
        os.makedirs(STATE)
    with open(os.path.join(STATE, '%s.status' % vmid), 'w') as handle:
        handle.write('stopped\n' if command == 'shutdown' else 'running\n')


def main(argv):
    with open(LOG, 'a') as log:
        log.write(' '.join(argv) + '\n')
    if len(argv) < 2 or not argv[1].isdigit():
        die('400 not enough arguments\nqm <command> <vmid> [OPTIONS]')
    command, vmid = argv[0], argv[1]
    if command == 'config':
        config(vmid, '--current' in argv[2:])
    elif command == 'status':
        read(vmid)
        print('status: %s' % state(vmid))
    elif command == 'set':
        set_(vmid, argv[2:])
    elif command in ('reboot', 'shutdown', 'start'):
        power(command, vmid)
    else:
        die('qm stub: %s is not implemented' % command, 2)


if __name__ == '__main__':
    main(sys.argv[1:])
