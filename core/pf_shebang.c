/* pf_shebang.c - the program a "#!" line runs (pf_shebang.h). */
#include "pf_shebang.h"

#include <string.h>

const char *pf_file_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static const char *const blanks = " \t";
static const char *const word_end = " \t\r\n";

int pf_shebang_program(const char *text, char *out, size_t cap)
{
    if (text[0] != '#' || text[1] != '!')
        return -1;
    const char *word = text + 2;
    word += strspn(word, blanks);
    size_t len = strcspn(word, word_end);
    if ((len == 3 || (len > 3 && word[len - 4] == '/')) && strncmp(word + len - 3, "env", 3) == 0) {
        /* env's options (-S) and VAR=value assignments come before the program */
        for (word += len; *(word += strspn(word, blanks)) && !strchr("\r\n", *word); word += len) {
            len = strcspn(word, word_end);
            if (word[0] != '-' && !memchr(word, '=', len))
                break;
        }
        len = strcspn(word, word_end);
    }
    if (len == 0 || len >= cap)
        return -1;
    memcpy(out, word, len);
    out[len] = '\0';
    return 0;
}
