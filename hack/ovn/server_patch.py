# Appended by hack/ovn.sh to hack/dataplane/server_patch.py (workers in the API process,
# sqlite's "database is locked" retried as a deadlock) for ML2/OVN.
#
# The OVN mechanism driver connects to the OVN databases when a worker process announces
# itself (PROCESS AFTER_INIT), which neutron_lib's BaseWorker does only in forked workers;
# the workers that run in the API process announce themselves here too.
from neutron_lib.callbacks import events as _events
from neutron_lib.callbacks import registry as _registry
from neutron_lib.callbacks import resources as _resources
from neutron_lib import worker as _worker

_base_start = _worker.BaseWorker.start


def _start_and_announce(self, name="neutron-server", desc=None):
    _base_start(self, name, desc)
    if self.worker_process_count == 0:
        _registry.publish(_resources.PROCESS, _events.AFTER_INIT, self.start)


_worker.BaseWorker.start = _start_and_announce
