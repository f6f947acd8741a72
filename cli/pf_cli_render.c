/* pf_cli_render.c - rendering a profile to the terminal and to the files the user named (--json, --dot,
 * --html, report -o), each written through pf_out (a temporary renamed over the name, or a device or FIFO
 * opened once), and the flow graph through Graphviz. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pf_cli_int.h"

/* Runs Graphviz's `dot -Tsvg` with stdin and stdout on the given descriptors. Returns its exit status
 * (127: not installed), or -1. */
static int run_dot(int in, int out)
{
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
        dup2(in, STDIN_FILENO);
        dup2(out, STDOUT_FILENO);
        execlp("dot", "dot", "-Tsvg", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

/* FILE.svg beside a .dot file just written, when Graphviz is installed; says why not otherwise (once). */
static void dot_to_svg(pf_out_t *dot)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s.svg", dot->path);
    pf_out_t svg;
    if (pf_out_prepare(&svg, "flow graph SVG", path, NULL, 0) != 0)
        return;
    int in = openat(dot->dirfd, dot->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int out = in >= 0 ? pf_out_open(&svg) : -1;
    int status = out >= 0 ? run_dot(in, out) : -1;
    if (out >= 0)
        pf_out_commit(&svg, out, status == 0);
    if (in >= 0)
        close(in);
    if (status != 0)
        fprintf(stderr, "pyflow: %s written; no SVG (Graphviz's `dot` is %s)\n", dot->path,
                status == 127 ? "not installed" : "failing");
    pf_out_release(&svg);
}

/* The flow graph as SVG text, through Graphviz (NULL when it is not installed). Caller frees. */
static char *flow_graph_svg(const pf_model_t *model, const pf_dot_opts_t *dopts)
{
    FILE *dot = tmpfile(), *svg = tmpfile();
    char *text = NULL;
    if (dot && svg && pf_render_dot(model, dot, dopts) == 0 && fflush(dot) == 0 &&
        lseek(fileno(dot), 0, SEEK_SET) == 0 && run_dot(fileno(dot), fileno(svg)) == 0) {
        long len = lseek(fileno(svg), 0, SEEK_END);
        if (len > 0 && (text = malloc((size_t)len + 1)) &&
            pread(fileno(svg), text, (size_t)len, 0) == (ssize_t)len) {
            text[len] = '\0';
        } else {
            free(text);
            text = NULL;
        }
    }
    if (dot)
        fclose(dot);
    if (svg)
        fclose(svg);
    return text;
}

int pf_cli_target_prepare(pf_target_t *t, const char *what, const char *path, const char *keep)
{
    memset(t, 0, sizeof *t);
    t->out.dirfd = -1;
    if (!path)
        return 0;
    t->wanted = 1;
    if (strcmp(path, "-") == 0) {
        t->to_stdout = 1;
        return 0;
    }
    return pf_out_prepare(&t->out, what, path, keep, 0);
}

void pf_cli_target_release(pf_target_t *t)
{
    if (t->wanted && !t->to_stdout)
        pf_out_release(&t->out);
}

/* Writes one rendering to its target. Returns 0 or -1 after saying why. */
static int write_rendering(const pf_model_t *model, pf_target_t *t, const pf_outputs_t *o, pf_rendering_t kind)
{
    FILE *f = t->to_stdout ? stdout : pf_out_fopen(&t->out);
    if (!f)
        return -1;
    pf_dot_opts_t dopts = {.min_bytes = o->dot_min_bytes, .all = o->dot_all};
    int rc;
    if (kind == PF_R_DOT) {
        rc = pf_render_dot(model, f, &dopts);
    } else if (kind == PF_R_HTML) {
        pf_html_opts_t hopts = {.flow_svg = flow_graph_svg(model, &dopts)};
        rc = pf_render_html(model, f, &hopts);
        free((char *)hopts.flow_svg);
    } else if (kind == PF_R_CSV) {
        rc = pf_render_csv(model, f);
    } else if (kind == PF_R_SPEEDSCOPE) {
        rc = pf_render_speedscope(model, f);
    } else if (kind == PF_R_PPROF) {
        rc = pf_render_pprof(model, f);
    } else {
        rc = pf_render_json(model, f);
    }
    if (t->to_stdout ? fflush(stdout) != 0 : pf_out_fcommit(&t->out, f, rc == 0) != 0)
        rc = -1;
    if (rc < 0)
        fprintf(stderr, "pyflow: writing %s failed\n", t->to_stdout ? "to stdout" : t->out.path);
    else if (kind == PF_R_DOT && !t->to_stdout && !t->out.in_place)
        dot_to_svg(&t->out);
    return rc < 0 ? -1 : 0;
}

static int is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The text report rendered in memory, then written in one go: rendered straight to stderr, which stdio does
 * not buffer, it took a write(2) for each character (1,500 for one screen of report, each a trip through the
 * terminal's driver). Returns as pf_render_text, or -EIO when the stream refused the text. */
static int render_text_at_once(const pf_model_t *model, FILE *out, const pf_text_opts_t *topts)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return pf_render_text(model, out, topts);
    int rc = pf_render_text(model, mem, topts);
    if (fclose(mem) != 0) {
        free(text);
        return pf_render_text(model, out, topts);
    }
    if (len && (fwrite(text, 1, len, out) != len || fflush(out) != 0) && rc == 0)
        rc = -EIO;
    free(text);
    return rc;
}

int pf_cli_render(const char *profile, pf_outputs_t *o)
{
    return pf_cli_render_set(&profile, 1, o);
}

int pf_cli_render_set(const char *const *profiles, size_t n_profiles, pf_outputs_t *o)
{
    char err[1024];
    pf_model_t *model;
    pf_load_opts_t lo = o->load;
    lo.merge_children = 1;
    pf_follow_t *follow = o->follow;
    o->follow = NULL;
    if (follow && n_profiles != 1) {    /* it followed one profile: not this set */
        pf_follow_free(follow);
        follow = NULL;
    }
    /* several profiles, or a directory of them (pyflow env's), load as one job; a profile followed while
     * its program ran is read to its end, unless the follower gave up on it */
    int loaded = follow && pf_follow_finish(follow, &model) == 0 ? 0
                 : n_profiles > 1 || is_directory(profiles[0])
                     ? pf_model_load_set(profiles, n_profiles, &lo, &model, err, sizeof err)
                     : pf_model_load(profiles[0], &lo, &model, err, sizeof err);
    if (loaded < 0) {
        fprintf(stderr, "pyflow: %s\n", err);
        return -1;
    }
    int rc = 0;
    if (o->text && render_text_at_once(model, o->text_out, o->topts) < 0)
        rc = -1;
    if (o->json.wanted && write_rendering(model, &o->json, o, PF_R_JSON) < 0)
        rc = -1;
    if (o->dot.wanted && write_rendering(model, &o->dot, o, PF_R_DOT) < 0)
        rc = -1;
    if (o->html.wanted && write_rendering(model, &o->html, o, PF_R_HTML) < 0)
        rc = -1;
    if (o->export_to.wanted && write_rendering(model, &o->export_to, o, o->export_kind) < 0)
        rc = -1;
    pf_model_free(model);
    return rc;
}
