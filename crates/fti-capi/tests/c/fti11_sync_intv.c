/* FTI 1.1's test `syncIntv`, for libfti: heatdis (fti11_heat.h) with FTI_Snapshot every
 * iteration, each iteration from 3000 on taking a second longer, so that FTI_Snapshot's
 * measured iteration time, its checkpoint interval and its resynchronisation interval change;
 * rank 0 prints "Checkpoint made i = N" for each checkpoint taken, which syncIntvTest.sh
 * compares with FTI's debug lines "Current iter : ...". No failure, no restart.
 *
 *   fti11_sync_intv CONFIG
 *
 * Exit status 0 when the final error is FTI's. */
#include "fti11_heat.h"

#include <unistd.h>

/* Iterations from here on take a second longer. */
#define ITER_SLOW_FROM 3000

int main(int argc, char** argv) {
    if (argc < 2) {
        printf("usage: fti11_sync_intv CONFIG\n");
        return 2;
    }
    int i;
    heat_run run = heat_start(&argc, &argv, &i);
    int procs = run.procs, rank = run.rank, m = run.m, lines = run.lines;
    double *h = run.h, *g = run.g;
    double started = MPI_Wtime(), local, global = 1;
    for (i = 0; i < ITER_TIMES; i++) {
        int snapshot = FTI_Snapshot();
        if (snapshot != FTI_SCES && snapshot != FTI_DONE) {
            printf("%d: Snapshot failed! Returned %d.\n", rank, snapshot);
            break;
        }
        if (rank == 0 && snapshot == FTI_DONE) printf("Checkpoint made i = %d\n", i);
        local = step(procs, rank, m, lines, g, h);
        if (i % ITER_OUT == 0 && rank == 0) printf("Step : %d, error = %f\n", i, global);
        if (i % REDUCE == 0) MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, FTI_COMM_WORLD);
        if (global < PRECISION) break;
        if (i >= ITER_SLOW_FROM) sleep(1);
    }
    if (rank == 0) printf("Execution finished in %lf seconds. Error = %f\n", MPI_Wtime() - started, global);
    int rtn = 0;
    if (!heat_verified(global, rank)) rtn = 1;
    free(h);
    free(g);
    FTI_Finalize();
    MPI_Finalize();
    return rtn;
}
