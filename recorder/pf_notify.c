/* pf_notify.c - pyflow's messages (pf_log); a child process's go to the launcher (pf_runtime.h, PF_NOTES_NAME), not to the
 * program's stderr. One datagram, never waiting: where no launcher listens (an older one, or it is gone)
 * the caller falls back to stderr; where its queue is full, the message is dropped. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pf_rec_int.h"
#include "pf_runtime.h"

/* Hands a message (without "pyflow: " and newline) to the launcher. Returns 1 when sent. */
static int pf_notify_launcher(const char *msg, size_t len)
{
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    int name = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, PF_NOTES_NAME, (unsigned long long)pf_cfg.run_id);
    char comm[17] = "";
    prctl(PR_GET_NAME, comm, 0, 0, 0);
    for (char *c = comm; *c; c++)
        if (*c == ' ' || (unsigned char)*c < 0x20)
            *c = '_';   /* one word: the launcher splits the fields on spaces */
    char buf[PF_NOTES_MAX];
    int n = snprintf(buf, sizeof buf, "%u %u %s %.*s", (unsigned)getpid(), (unsigned)getuid(), comm[0] ? comm : "?",
                     (int)len, msg);
    if (n <= 0)
        return 0;
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return 0;
    ssize_t sent = sendto(s, buf, strlen(buf), MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)name));
    int full = sent < 0 && (errno == EAGAIN || errno == ENOBUFS);
    close(s);
    return sent > 0 || full;    /* a launcher with its queue full: the message is lost, never the program's stderr */
}

void pf_log(const char *fmt, ...)
{
    if (pf_cfg.quiet)
        return;
    char buf[512];
    int n = snprintf(buf, sizeof buf, "pyflow: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
    /* a child's stderr is the program's: the message goes to the launcher, which prints it with the report */
    if (!pf_cfg.is_root && pf_cfg.run_id && pf_notify_launcher(buf + n, len - (size_t)n))
        return;
    buf[len++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, buf, len);
    (void)ignored;
}
