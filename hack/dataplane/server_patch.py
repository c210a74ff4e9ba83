# Loaded by .local/openstack/bin/neutron-server when hack/dataplane.sh put it there.
#
# With agents, neutron-server needs RPC workers, and it always forks at least one RPC worker
# plus a periodic worker. Several processes writing one sqlite file fail with "database is
# locked". Two changes keep the project's single-process sqlite setup:
#   1. every worker runs as greenthreads of the API process (process count 0);
#   2. sqlite's "database is locked" (a deferred transaction that cannot become a writer) is
#      raised as oslo.db's DBDeadlock, which neutron's API and RPC handlers retry with backoff.
import sqlalchemy.exc
from oslo_db import exception as db_exception
from oslo_db.sqlalchemy import exc_filters

import neutron.service

_start_workers = neutron.service._start_workers


def _start_workers_in_api_process(workers, neutron_api=None):
    for worker in workers:
        worker._worker_process_count = 0
    return _start_workers(workers, neutron_api)


neutron.service._start_workers = _start_workers_in_api_process


@exc_filters.filters("sqlite", sqlalchemy.exc.OperationalError, r".*database is locked")
def _locked_as_deadlock(error, match, engine_name, is_disconnect):
    raise db_exception.DBDeadlock(error)
