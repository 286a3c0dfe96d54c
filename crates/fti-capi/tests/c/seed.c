/* The seed example of FTI-FF's design document (sizes / 1000) through FTI's C API: seven L1
 * checkpoints of int arrays that grow, shrink and appear, re-protected after each resize.
 *
 *   seed write CONFIG     the seven checkpoints, then exits without FTI_Finalize
 *   seed restart CONFIG   restarts: sizes from FTI_GetStoredSize, buffers from FTI_Realloc,
 *                         FTI_Recover, checks every value, FTI_Finalize
 *
 * Element j of dataset id holds id*1000003 + j (int32), as in the shared vectors. */
#include <fti.h>

#include <stdio.h>
#include <string.h>

#define SHOW(...)                                                                              \
    do {                                                                                       \
        printf("= " __VA_ARGS__);                                                              \
        printf("\n");                                                                          \
    } while (0)

#define NVARS 5
#define STEPS 7

/* Element counts of datasets 1..5 at each step (0: not protected yet). */
static const long COUNTS[STEPS][NVARS] = {
    {1000, 2000, 3000, 0, 0},    {1000, 2000, 3000, 4000, 0},    {1000, 6000, 7000, 4000, 0},
    {1000, 6000, 7000, 4000, 5000}, {1000, 5000, 6000, 4000, 5000}, {1000, 8000, 9000, 4000, 5000},
    {1000, 1000, 2000, 4000, 5000},
};

static void fill(int id, int* data, long count) {
    for (long j = 0; j < count; j++) data[j] = id * 1000003 + (int)j;
}

static int write_steps(void) {
    int* data[NVARS] = {0};
    for (int step = 0; step < STEPS; step++) {
        for (int v = 0; v < NVARS; v++) {
            long n = COUNTS[step][v];
            if (n == 0) continue;
            data[v] = realloc(data[v], n * sizeof(int));
            fill(v + 1, data[v], n);
            if (FTI_Protect(v + 1, data[v], n, FTI_INTG) != FTI_SCES) return 1;
        }
        SHOW("checkpoint %d: %d", step + 1, FTI_Checkpoint(step + 1, 1));
    }
    /* A crash: no FTI_Finalize. */
    return 0;
}

static int restart(void) {
    SHOW("status %d", FTI_Status());
    int* data[NVARS] = {0};
    for (int v = 0; v < NVARS; v++) FTI_Protect(v + 1, NULL, 0, FTI_INTG);
    for (int v = 0; v < NVARS; v++) {
        long stored = FTI_GetStoredSize(v + 1);
        data[v] = FTI_Realloc(v + 1, data[v]);
        SHOW("dataset %d: stored %ld bytes, buffer %s", v + 1, stored,
             data[v] == NULL ? "NULL" : "allocated");
    }
    int recovered = FTI_Recover();
    SHOW("recover %d status %d", recovered, FTI_Status());
    long wrong = 0;
    for (int v = 0; v < NVARS; v++) {
        for (long j = 0; j < COUNTS[STEPS - 1][v]; j++) {
            wrong += data[v][j] != (v + 1) * 1000003 + (int)j;
        }
    }
    SHOW("wrong values %ld", wrong);
    SHOW("finalize %d", FTI_Finalize());
    for (int v = 0; v < NVARS; v++) free(data[v]);
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: seed write|restart CONFIG\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    SHOW("init %d", FTI_Init(argv[2], MPI_COMM_WORLD));
    int rc = strcmp(argv[1], "write") == 0 ? write_steps() : restart();
    MPI_Finalize();
    return rc;
}
