# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""PCI driver binding through sysfs, one function at a time, with deadlines.

Sequence (Documentation/ABI/testing/sysfs-bus-pci): write ``driver_override`` (it does not unbind or load
anything by itself), write the address to ``<dev>/driver/unbind``, write it to ``/sys/bus/pci/drivers_probe``,
then wait for the ``driver`` link to name the wanted driver.

Unbinding a GPU that is in use blocks inside the kernel ("NVRM: Attempting to remove device ... with non-zero usage
count!"), and no signal ends such a write. Each write therefore runs in a forked child in its own session with
stdin/stdout/stderr on /dev/null: on a deadline the parent gives up and reports the stuck pid, and the stuck child
holds none of Ansible's pipes, so the task still returns.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import os
import select
import time

from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import normalize_pci_address

try:
    MAXFD = os.sysconf('SC_OPEN_MAX')
except (AttributeError, ValueError, OSError):
    MAXFD = 1024


class BindError(Exception):
    """A sysfs write failed or timed out, or the device did not end up on the wanted driver."""


def write_with_timeout(path, value, timeout):
    """Write ``value`` to ``path`` from a detached child; return None on success, else an error string."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: no return from this branch
        status = b'0'
        try:
            os.close(read_end)
            if write_end < 3:  # stdio was closed when the pipe was made: keep the pipe clear of the dup2 below
                write_end = fcntl.fcntl(write_end, fcntl.F_DUPFD, 3)
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            # Keep nothing else either (a pipe to Ansible held by a stuck child would hold the task open).
            os.closerange(3, write_end)
            os.closerange(write_end + 1, MAXFD)
            handle = os.open(path, os.O_WRONLY)
            try:
                os.write(handle, value.encode('utf-8'))
            finally:
                os.close(handle)
        except OSError as exc:
            status = ('%d %s' % (exc.errno or 0, exc.strerror or exc)).encode('utf-8', 'replace')
        except Exception as exc:  # pylint: disable=broad-except
            status = ('0 %s' % exc).encode('utf-8', 'replace')
        try:
            os.write(write_end, status)
        finally:
            os._exit(0)  # pylint: disable=protected-access

    os.close(write_end)
    deadline = time.time() + timeout
    data = b''
    finished = False
    try:
        while True:
            remaining = deadline - time.time()
            if remaining <= 0:
                break
            try:
                ready, dummy, dummy = select.select([read_end], [], [], remaining)
            except (OSError, select.error) as exc:  # EINTR on old Pythons
                if getattr(exc, 'errno', None) == errno.EINTR or (exc.args and exc.args[0] == errno.EINTR):
                    continue
                raise
            if not ready:
                continue
            chunk = os.read(read_end, 4096)
            if not chunk:
                finished = True
                break
            data += chunk
    finally:
        os.close(read_end)
    if finished:
        os.waitpid(pid, 0)
        text = data.decode('utf-8', 'replace')
        if text == '0':
            return None
        code, dummy, message = text.partition(' ')
        return 'writing %r to %s failed: %s (errno %s)' % (value.strip(), path, message or 'unknown error', code)
    os.waitpid(pid, os.WNOHANG)
    return ('writing %r to %s did not return within %s s (pid %d is stuck in the kernel; a driver is waiting for its '
            'users to let go, see dmesg)' % (value.strip(), path, timeout, pid))


class SysfsBinder(object):
    """Driver (re)binding of PCI functions below ``sysfs.root``.

    ``write(path, value, timeout)`` returns None or an error string (default: :func:`write_with_timeout`); tests
    pass a fake kernel. ``log`` collects every write for the module's result.
    """

    def __init__(self, sysfs, timeout=10.0, write=None, sleep=time.sleep, clock=time.time, poll_interval=0.1):
        self.sysfs = sysfs
        self.timeout = float(timeout)
        self._write = write or write_with_timeout
        self._sleep = sleep
        self._clock = clock
        self.poll_interval = poll_interval
        self.log = []

    def write(self, path, value):
        self.log.append({'path': path, 'value': value.strip()})
        error = self._write(path, value, self.timeout)
        if error:
            raise BindError(error)

    def set_override(self, address, driver):
        """``driver`` None clears the override (a lone newline is what `echo > driver_override` writes)."""
        self.write(self.sysfs.device_path(address, 'driver_override'), (driver or '') + '\n')
        current = self.sysfs.driver_override(address)
        if current != (driver or None):
            raise BindError('%s: driver_override reads %r after writing %r' % (address, current, driver))

    def unbind(self, address):
        address = normalize_pci_address(address)
        if self.sysfs.driver(address) is None:
            return False
        self.write(self.sysfs.device_path(address, 'driver', 'unbind'), address)
        self.wait(address, lambda driver: driver is None, 'unbound')
        return True

    def probe(self, address):
        self.write(self.sysfs.path('sys/bus/pci/drivers_probe'), normalize_pci_address(address))

    def remove_id(self, driver, pci_id):
        """Drop a dynamic ID (``new_id``, as Proxmox writes it for vfio-pci at VM start) so that it cannot claim an
        identical card that is being returned to its host driver. ENODEV (no such dynamic ID) is the normal case."""
        path = self.sysfs.path('sys/bus/pci/drivers', driver, 'remove_id')
        if not os.path.exists(path):
            return False
        vendor, device = pci_id.split(':')
        self.log.append({'path': path, 'value': '%s %s' % (vendor, device)})
        error = self._write(path, '%s %s\n' % (vendor, device), self.timeout)
        return error is None

    def wait(self, address, predicate, what):
        deadline = self._clock() + self.timeout
        while True:
            driver = self.sysfs.driver(address)
            if predicate(driver):
                return driver
            if self._clock() >= deadline:
                raise BindError('%s: not %s within %s s (driver is %s)' % (address, what, self.timeout, driver or 'none'))
            self._sleep(self.poll_interval)

    def bind(self, address, driver, expect=None):
        """driver_override -> unbind -> drivers_probe -> wait.

        ``driver`` is the override to set (None clears it, letting the kernel pick the native driver).
        ``expect``: callable(driver name or None) -> bool that decides success; default: equals ``driver``.
        Returns the driver the function ended up on.
        """
        address = normalize_pci_address(address)
        if expect is None:
            def expect(name):
                return name == driver
        self.set_override(address, driver)
        self.unbind(address)
        self.probe(address)
        return self.wait(address, expect, 'bound to %s' % (driver or 'its host driver'))
