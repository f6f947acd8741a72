/* pf_notes.c - the children's messages (pf_notes.h). */
#include "pf_notes.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pf_runtime.h"

#define PF_NOTES_SHOWN 20

int pf_notes_open(unsigned long long run_id)
{
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return -1;
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, PF_NOTES_NAME, run_id);
    int big = 1 << 20;  /* room for many children's messages until the program ends */
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    if (bind(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) != 0) {
        close(s);
        return -1;
    }
    return s;
}

void pf_notes_add(pf_notes_t *out, const char *text)
{
    char **grown = realloc(out->lines, (out->n + 1) * sizeof *grown);
    char *copy = strdup(text);
    if (!grown || !copy) {
        free(copy);
        if (grown)
            out->lines = grown;
        return;
    }
    out->lines = grown;
    out->lines[out->n++] = copy;
}

void pf_notes_collect(int fd, pf_notes_t *out)
{
    out->lines = NULL;
    out->n = 0;
    if (fd < 0)
        return;
    char msg[PF_NOTES_MAX + 1], last[PF_NOTES_MAX + 1] = "", line[PF_NOTES_MAX + 128];
    unsigned shown = 0, more = 0;
    ssize_t n;
    while ((n = recv(fd, msg, PF_NOTES_MAX, MSG_DONTWAIT)) > 0) {
        msg[n] = '\0';
        for (char *c = msg; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
        unsigned pid, uid;
        char comm[32];
        int text = 0;
        if (sscanf(msg, "%u %u %31s %n", &pid, &uid, comm, &text) != 3 || !text)
            continue;
        if (strcmp(msg + text, last) == 0)
            continue;   /* the same from many children: once */
        snprintf(last, sizeof last, "%s", msg + text);
        if (shown++ >= PF_NOTES_SHOWN) {
            more++;
            continue;
        }
        char who[64] = "";
        if (uid != (unsigned)getuid())
            snprintf(who, sizeof who, ", user id %u", uid);
        snprintf(line, sizeof line, "child process %u (%s%s): %s", pid, comm, who, msg + text);
        pf_notes_add(out, line);
    }
    if (more) {
        snprintf(line, sizeof line, "... and %u more messages from child processes", more);
        pf_notes_add(out, line);
    }
    close(fd);
}

void pf_notes_print(const pf_notes_t *notes, FILE *out)
{
    for (size_t i = 0; i < notes->n; i++)
        fprintf(out, "pyflow: %s\n", notes->lines[i]);
}

void pf_notes_free(pf_notes_t *notes)
{
    for (size_t i = 0; i < notes->n; i++)
        free(notes->lines[i]);
    free(notes->lines);
    notes->lines = NULL;
    notes->n = 0;
}
