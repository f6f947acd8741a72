"""A Dask LocalCluster job with worker processes: task i allocates (i + 1) MiB on its own line; the main
process sums what they return. "kill PIDFILE": the first run of task 0 writes its worker's pid there and
SIGKILLs that worker mid-job; Dask's nanny starts a new worker and the task runs again, so the job still
finishes, and the report must say which worker was killed."""
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
