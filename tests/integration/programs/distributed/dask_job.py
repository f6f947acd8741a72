"""A Dask LocalCluster job with worker processes: each task allocates a known amount on its own line of
this file (task i: (i + 1) MiB) and returns a small number; the main process sums them. Argument
"kill": one task kills its worker process mid-job (Dask's nanny starts a new one and the task is retried
elsewhere... the job still finishes), so the report must say that worker was killed."""
import os
import signal
import sys

from dask.distributed import Client, LocalCluster

N_WORKERS = 4


def task(i, kill_pid_file=None):
    block = bytearray((i + 1) << 20)   # TASK_LINE: task i allocates (i + 1) MiB
    if kill_pid_file and i == 0 and not os.path.exists(kill_pid_file):
        with open(kill_pid_file, "w") as f:
            f.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return len(block) >> 20


def main():
    kill_file = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "kill" else None
    with LocalCluster(n_workers=N_WORKERS, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=50) as cluster, Client(cluster) as client:
        futures = client.map(task, range(8), kill_pid_file=kill_file)   # SUBMIT_LINE
        total = sum(client.gather(futures))
        workers = len(client.scheduler_info()["workers"])
    print(f"total {total} MiB from {workers} workers", flush=True)


if __name__ == "__main__":
    main()
