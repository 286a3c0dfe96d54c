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
    int fail = atoi(argv[2]), procs, rank, i;
    MPI_Init(&argc, &argv);
    FTI_Init(argv[1], MPI_COMM_WORLD);
    MPI_Comm_size(FTI_COMM_WORLD, &procs);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    int m, lines;
    heat_size(procs, &m, &lines);
    double* h = malloc(sizeof(double) * m * lines);
    double* g = malloc(sizeof(double) * m * lines);
    init_data(lines, m, rank, g);
    if (rank == 0) {
        printf("Local data size is %d x %d = %f MB (4).\n", m, lines,
               (double)(m * lines * 2 * sizeof(double) / (1024 * 1024)));
        printf("Target precision : %f \n", PRECISION);
        printf("Maximum number of iterations : %d \n", ITER_TIMES);
    }
    FTI_Protect(0, &i, 1, FTI_INTG);
    FTI_Protect(1, h, (long)m * lines, FTI_DBLE);
    FTI_Protect(2, g, (long)m * lines, FTI_DBLE);
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
