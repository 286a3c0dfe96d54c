/* FTI 1.1's test `addInArray`, for libfti: every rank protects an iteration counter and a
 * number (its rank at first, + 1 per iteration), gathers everyone's number each iteration
 * and checkpoints every 10 iterations (ids 1, 2, ...) at LEVEL; it always ends with
 * FTI_Finalize, so with keep_last_ckpt = 1 the restart recovers from L4.
 *
 *   fti11_add_in_array CONFIG LEVEL FAIL
 *
 * FAIL = 1: stops after iteration 63 ("Work stopped at i = 63."). FAIL = 0: recovers, checks
 * i = 60, works to iteration 120 and rank 0 checks the gathered numbers ("Success." or
 * "Failure."). Exit status 0 on success. */
#include "fti11_suite.h"

#define ITERATIONS 120
#define ITER_CHECK 10
#define ITER_STOP 63

static int work(int* gathered, int rank, int level, int fail) {
    int i = 0, number = rank;
    FTI_Protect(1, &i, 1, FTI_INTG);
    FTI_Protect(2, &number, 1, FTI_INTG);
    if (FTI_Status() != 0 && fail == 0) {
        int res = FTI_Recover();
        if (res != 0) {
            printf("%d: FTI_Recover returned %d.\n", rank, res);
            return 2;
        }
    }
    if (fail == 0 && i != ITER_STOP - ITER_STOP % ITER_CHECK) return 2;
    if (rank == 0) printf("Starting work at i = %d.\n", i);
    for (; i < ITERATIONS; i++) {
        if (i % ITER_CHECK == 0) {
            int res = FTI_Checkpoint(i / ITER_CHECK + 1, level);
            if (res != FTI_DONE) {
                printf("%d: FTI_Checkpoint returned %d.\n", rank, res);
                return 1;
            }
        }
        MPI_Allgather(&number, 1, MPI_INT, gathered, 1, MPI_INT, FTI_COMM_WORLD);
        if (fail && i >= ITER_STOP) {
            if (rank == 0) printf("Work stopped at i = %d.\n", ITER_STOP);
            break;
        }
        number += 1;
    }
    return 0;
}

/* The last gather: rank r's number after the 120 iterations. */
static int verify(const int* gathered, int size) {
    for (int r = 0; r < size; r++) {
        if (gathered[r] != ITERATIONS + (r - 1)) {
            printf("array[%d] = %d, should be %d.\n", r, gathered[r], ITERATIONS + (r - 1));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        printf("usage: fti11_add_in_array CONFIG LEVEL FAIL\n");
        return 2;
    }
    int level = atoi(argv[2]), fail = atoi(argv[3]), rank, size;
    MPI_Init(&argc, &argv);
    FTI_Init(argv[1], MPI_COMM_WORLD);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    MPI_Comm_size(FTI_COMM_WORLD, &size);
    int* gathered = calloc(size, sizeof(int));
    int rtn = work(gathered, rank, level, fail);
    if (rank == 0 && rtn == 0 && !fail) {
        rtn = verify(gathered, size);
        printf(rtn == 0 ? "Success.\n" : "Failure.\n");
    }
    free(gathered);
    FTI_Finalize();
    MPI_Finalize();
    return rtn;
}
