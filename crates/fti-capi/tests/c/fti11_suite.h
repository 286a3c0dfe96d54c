/* Shared by the programs of FTI 1.1's test suite rewritten for libfti (fti11_*.c): reading
 * the config file as FTI's tests do (section:key, case-insensitive), and the way those
 * programs stop a run without FTI_Finalize so that its local checkpoints stay. */
#ifndef FTI11_SUITE_H
#define FTI11_SUITE_H

#define _POSIX_C_SOURCE 200809L
#include <fti.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Copies `value` of `key` in `[section]` of the ini file `path` into `out` (at most `cap`
 * bytes, trimmed); returns 0 when absent. */
static inline int suite_ini(const char* path, const char* section, const char* key, char* out,
                     size_t cap) {
    FILE* f = fopen(path, "r");
    if (f == NULL) return 0;
    char line[512], current[128] = "";
    int found = 0;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        char* s = line;
        while (isspace((unsigned char)*s)) s++;
        if (*s == '#' || *s == ';' || *s == '\0') continue;
        if (*s == '[') {
            char* end = strchr(s, ']');
            if (end == NULL) continue;
            *end = '\0';
            snprintf(current, sizeof current, "%s", s + 1);
            continue;
        }
        char* eq = strchr(s, '=');
        if (eq == NULL || strcasecmp(current, section) != 0) continue;
        char* k_end = eq;
        while (k_end > s && isspace((unsigned char)k_end[-1])) k_end--;
        if ((size_t)(k_end - s) != strlen(key) || strncasecmp(s, key, k_end - s) != 0) continue;
        char* v = eq + 1;
        while (isspace((unsigned char)*v)) v++;
        size_t n = strcspn(v, "#;\r\n");
        while (n > 0 && isspace((unsigned char)v[n - 1])) n--;
        snprintf(out, cap, "%.*s", (int)n, v);
        found = 1;
    }
    fclose(f);
    return found;
}

static inline long suite_ini_int(const char* path, const char* section, const char* key, long dflt) {
    char value[64];
    return suite_ini(path, section, key, value, sizeof value) ? atol(value) : dflt;
}

/* Whether checkpoint level `level` is post-processed by the heads (inline_lK = 0). */
static inline int suite_offline(const char* path, int level) {
    static const char* keys[] = {"", "", "inline_l2", "inline_l3", "inline_l4"};
    if (level < 2 || level > 4) return 0;
    return suite_ini_int(path, "basic", keys[level], 1) == 0;
}

/* Ends a run without FTI_Finalize, as FTI's tests do to keep the local checkpoints: with
 * dedicated heads, first the outcome of the last post-processing is taken from this rank's
 * head (when `level` was handed to it), then the head is told that the work has ended
 * (FTI_ENDW with the config's mpi_tag) and every process meets in a barrier. */
static inline void suite_end_without_finalize(const char* config, int level) {
    int world;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    int heads = (int)suite_ini_int(config, "basic", "head", 0);
    int node_size = (int)suite_ini_int(config, "basic", "node_size", 1);
    int tag = (int)suite_ini_int(config, "advanced", "mpi_tag", 2612);
    if (heads > 0) {
        int head = world - world % node_size, msg;
        if (suite_offline(config, level)) {
            MPI_Recv(&msg, 1, MPI_INT, head, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        msg = FTI_ENDW;
        MPI_Send(&msg, 1, MPI_INT, head, tag, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

#endif
