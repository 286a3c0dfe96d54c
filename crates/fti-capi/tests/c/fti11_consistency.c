/* FTI 1.1's corner-case test `consistency` (test/cornerCases), for libfti. Every rank
 * protects four quarters of an array of 1Mi ints (ids 1-4), a[j] = j + rank; `config.fti` in
 * the working directory.
 *
 *   fti11_consistency CASE LEVEL RUN
 *
 * CASE 1 (state after a successful recovery): RUN 0 checkpoints at LEVEL and crashes; RUN 1
 * recovers and crashes without a checkpoint; RUN 2 recovers (after the driver erased files
 * between the runs), or at L1 and L4, where nothing is left, FTI_Init must have failed.
 * CASE 2 (keep_last_ckpt): RUN 0 checkpoints and finalizes; RUN 1 recovers and crashes
 * without a checkpoint; RUN 2 recovers and finalizes.
 * CASE 3 (two problems in one execution): checkpoint, recover, finalize, then FTI_Init with
 * `config2.fti`, a second array checkpointed, recovered and finalized.
 * CASE 4 (FTI_Init twice): FTI_Init again, then finalize.
 * A crash ends the run without FTI_Finalize (fti11_suite.h). Exit status 0 on success; a
 * wrong value or an unexpected outcome aborts. */
#include "fti11_suite.h"

#define ARRAY_SIZE (1024 * 1024)
#define QUARTER (ARRAY_SIZE / 4)

static int* array;
static int rank, level, run, init_status;

static void fill(int* a) {
    for (int j = 0; j < ARRAY_SIZE; j++) a[j] = j + rank;
}

static void check(const int* a) {
    for (int j = 0; j < ARRAY_SIZE; j++) {
        if (a[j] != j + rank) {
            printf("%d: array[%d]: %d != %d\n", rank, j, a[j], j + rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Barrier(FTI_COMM_WORLD);
    if (rank == 0) printf("Array values correct.\n");
}

static void fail_with(const char* what, int value) {
    printf("%d: %s (%d)\n", rank, what, value);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Ends the run here without FTI_Finalize; `level_used`: the level whose post-processing by
 * the heads is awaited (0: none). */
static void crash(int level_used) {
    MPI_Barrier(FTI_COMM_WORLD);
    suite_end_without_finalize("config.fti", level_used);
    MPI_Barrier(FTI_COMM_WORLD);
    MPI_Finalize();
    free(array);
    exit(0);
}

static void recover_or_abort(void) {
    if (rank == 0) printf("Trying to recover.\n");
    int res = FTI_Recover();
    if (res != FTI_SCES) fail_with("Should recover, but FTI_Recover returned", res);
}

static void after_recovery(void) {
    if (run == 0) {
        FTI_Checkpoint(1, level);
        if (rank == 0) printf("Checkpoint done. Simulating crash.\n");
        crash(level);
    }
    recover_or_abort();
    if (run == 1) {
        if (rank == 0) printf("Recover done. Simulating crash.\n");
        crash(0);
    }
    if (rank == 0) printf("Recover done.\n");
}

static void keep_last(void) {
    if (run == 0) {
        FTI_Checkpoint(1, level);
        return;
    }
    recover_or_abort();
    if (run == 1) {
        if (rank == 0) printf("Recover done. Simulating crash.\n");
        crash(0);
    }
    if (rank == 0) printf("Recover done.\n");
}

static int second_problem(void) {
    int rtn = FTI_Init("config2.fti", MPI_COMM_WORLD);
    int* other = malloc(sizeof(int) * ARRAY_SIZE);
    fill(other);
    FTI_Protect(1, other, ARRAY_SIZE, FTI_INTG);
    FTI_Checkpoint(1, level);
    memset(other, 0, sizeof(int) * ARRAY_SIZE);
    rtn += FTI_Recover();
    check(other);
    free(other);
    FTI_Finalize();
    return rtn;
}

/* CASE 1 and 2: what FTI_Init must have returned. */
static void check_init(int which) {
    if (which == 1 && run == 2 && (level == 1 || level == 4)) {
        if (init_status == FTI_SCES) fail_with("Nothing is left to recover at L1 and L4, but FTI_Init returned", init_status);
        printf("Succes, fail == 2 and cannot recover.\n");
        FTI_Finalize();
        MPI_Finalize();
        exit(0);
    }
    if (init_status != FTI_SCES) fail_with("FTI_Init failed", init_status);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int world;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    if (argc != 4) {
        if (world == 0) printf("usage: fti11_consistency CASE(1-4) LEVEL(1-4) RUN(0-2)\n");
        MPI_Finalize();
        return 1;
    }
    int which = atoi(argv[1]);
    level = atoi(argv[2]);
    run = atoi(argv[3]);
    if (world == 0) printf("testCase = %d, ckpt_lvl = %d, fail = %d\n", which, level, run);
    init_status = FTI_Init("config.fti", MPI_COMM_WORLD);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    if (which == 1 || which == 2) check_init(which);
    array = malloc(sizeof(int) * ARRAY_SIZE);
    if (run == 0) fill(array);
    for (int q = 0; q < 4; q++) FTI_Protect(q + 1, array + q * QUARTER, QUARTER, FTI_INTG);
    int rtn = 0;
    if (which == 1) after_recovery();
    if (which == 2) keep_last();
    if (which == 3) {
        FTI_Checkpoint(1, level);
        memset(array, 0, sizeof(int) * ARRAY_SIZE);
        rtn += FTI_Recover();
    }
    if (which == 4) rtn += FTI_Init("config.fti", MPI_COMM_WORLD);
    check(array);
    FTI_Finalize();
    if (which == 3) rtn += second_problem();
    MPI_Finalize();
    free(array);
    return rtn;
}
