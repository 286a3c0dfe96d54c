/* A run killed after its checkpoints, and its restart with the same config file:
 *
 *   crash write CONFIG LEVEL wait|die   three checkpoints at LEVEL, data changed once more,
 *                                       then "= ready" and either waits to be killed or kills
 *                                       itself (SIGKILL, every rank)
 *   crash restart CONFIG LEVEL          FTI_Status, FTI_Recover, checks the data of the third
 *                                       checkpoint, one more checkpoint, FTI_Finalize
 *
 * Each rank protects an iteration counter, an array of doubles whose length depends on the
 * rank, and a small array of longs. */
#define _POSIX_C_SOURCE 200809L
#include <fti.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SHOW(...)                                                                              \
    do {                                                                                       \
        printf("= " __VA_ARGS__);                                                              \
        printf("\n");                                                                          \
        fflush(stdout);                                                                        \
    } while (0)

static int rank, step;
static long n, meta[3];
static double* data;

static void fill(int s) {
    step = s;
    for (long i = 0; i < n; i++) data[i] = rank * 1e6 + s * 1e3 + i * 0.5;
    meta[0] = rank;
    meta[1] = s;
    meta[2] = n;
}

static int holds(int s) {
    long wrong = step != s || meta[0] != rank || meta[1] != s || meta[2] != n;
    for (long i = 0; i < n; i++) wrong += data[i] != rank * 1e6 + s * 1e3 + i * 0.5;
    return wrong == 0;
}

static void protect(void) {
    FTI_Protect(0, &step, 1, FTI_INTG);
    FTI_Protect(1, data, n, FTI_DBLE);
    FTI_Protect(2, meta, 3, FTI_LONG);
}

int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: crash write|restart CONFIG LEVEL [wait|die]\n");
        return 2;
    }
    int level = atoi(argv[3]);
    MPI_Init(&argc, &argv);
    int init = FTI_Init(argv[2], MPI_COMM_WORLD);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    n = 1000 + 37 * rank;
    data = calloc(n, sizeof *data);
    protect();
    if (strcmp(argv[1], "write") == 0) {
        SHOW("rank %d init %d status %d", rank, init, FTI_Status());
        for (int s = 1; s <= 3; s++) {
            fill(s);
            SHOW("rank %d checkpoint %d: %d", rank, s, FTI_Checkpoint(s, level));
        }
        fill(4); /* work after the last checkpoint, lost in the crash */
        MPI_Barrier(FTI_COMM_WORLD);
        if (rank == 0) SHOW("ready");
        /* Rank 0's line is out before any rank dies: MPICH's launcher ends the job then. */
        MPI_Barrier(FTI_COMM_WORLD);
        if (argc > 4 && strcmp(argv[4], "die") == 0) raise(SIGKILL);
        for (;;) pause();
    }
    int status = FTI_Status();
    int recovered = FTI_Recover();
    SHOW("rank %d init %d status %d recover %d holds checkpoint 3 %d status %d", rank, init,
         status, recovered, holds(3), FTI_Status());
    fill(5);
    SHOW("rank %d checkpoint 4: %d", rank, FTI_Checkpoint(4, level));
    SHOW("rank %d finalize %d", rank, FTI_Finalize());
    free(data);
    MPI_Finalize();
    return 0;
}
