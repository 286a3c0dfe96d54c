/* FTI 1.1's test `heatdis`, for libfti: heat diffusion over a grid split in rows between the
 * ranks (about 4 MiB per rank), FTI_Snapshot every iteration (its checkpoint intervals are the
 * config's), until the largest change is below 0.005 or 5000 iterations.
 *
 *   fti11_heatdis CONFIG FAIL
 *
 * FAIL = 1: stops after iteration 3100 (without reaching the precision). FAIL = 0: the final
 * error must be FTI's 0.004998 (within 1e-6), also after a restart that FTI_Snapshot
 * recovered. Both end with FTI_Finalize. Exit status 0 on success. */
#include "fti11_heat.h"

#define ITER_STOP 3100

int main(int argc, char** argv) {
    if (argc < 3) {
        printf("usage: fti11_heatdis CONFIG FAIL\n");
        return 2;
    }
    int fail = atoi(argv[2]), i;
    heat_run run = heat_start(&argc, &argv, &i);
    int procs = run.procs, rank = run.rank, m = run.m, lines = run.lines;
    double *h = run.h, *g = run.g;
    double started = MPI_Wtime(), local, global = 1;
    for (i = 0; i < ITER_TIMES; i++) {
        int before = i, snapshot = FTI_Snapshot();
        if (snapshot != FTI_SCES && snapshot != FTI_DONE) {
            printf("%d: Snapshot failed! Returned %d.\n", rank, snapshot);
            break;
        }
        if (rank == 0 && snapshot == FTI_DONE) printf("Checkpoint made i = %d\n", i);
        if (rank == 0 && snapshot == FTI_SCES && i != before) printf("Recovered! i = %d\n", i);
        local = step(procs, rank, m, lines, g, h);
        if (i % ITER_OUT == 0 && rank == 0) printf("Step : %d, error = %f\n", i, global);
        if (i % REDUCE == 0) MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, FTI_COMM_WORLD);
        if (global < PRECISION) break;
        if (fail && i >= ITER_STOP) {
            printf("%d: Stoped at i = %d.\n", rank, i);
            break;
        }
    }
    if (rank == 0) printf("Execution finished in %lf seconds. Error = %f\n", MPI_Wtime() - started, global);
    int rtn = 0;
    if (!fail && !heat_verified(global, rank)) rtn = 1;
    free(h);
    free(g);
    FTI_Finalize();
    MPI_Finalize();
    return rtn;
}
