/* Every return code of the C API a program can reach, one scenario per process:
 *
 *   codes SCENARIO [CONFIG...]
 *
 * Each call prints "= <label> <code>"; the test compares the lines with FTI 1.1's codes. */
#define _POSIX_C_SOURCE 200809L
#include <fti.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define SHOW(...)                                                                              \
    do {                                                                                       \
        printf("= " __VA_ARGS__);                                                              \
        printf("\n");                                                                          \
        fflush(stdout);                                                                        \
    } while (0)
#define CODE(label, call) SHOW("%s %d", label, (call))

static int ints[4];
static double reals[8];

static void fill(int seed) {
    for (int i = 0; i < 4; i++) ints[i] = seed * 10 + i;
    for (int i = 0; i < 8; i++) reals[i] = seed + i / 8.0;
}

/* Whether the data is what fill(seed) wrote. */
static int holds(int seed) {
    for (int i = 0; i < 4; i++)
        if (ints[i] != seed * 10 + i) return 0;
    for (int i = 0; i < 8; i++)
        if (reals[i] != seed + i / 8.0) return 0;
    return 1;
}

/* Every call before FTI_Init. */
static void uninitialized(void) {
    int x = 0;
    CODE("Status", FTI_Status());
    CODE("Protect", FTI_Protect(1, &x, 1, FTI_INTG));
    CODE("DefineDataset", FTI_DefineDataset(1, 1, &x, NULL, NULL));
    SHOW("GetStoredSize %ld", FTI_GetStoredSize(1));
    SHOW("Realloc unchanged %d", FTI_Realloc(1, &x) == &x);
    CODE("BitFlip", FTI_BitFlip(0));
    CODE("Checkpoint", FTI_Checkpoint(1, 1));
    CODE("Recover", FTI_Recover());
    CODE("RecoverVar", FTI_RecoverVar(1));
    CODE("RecoverVarInit", FTI_RecoverVarInit());
    CODE("RecoverVarFinalize", FTI_RecoverVarFinalize());
    CODE("Snapshot", FTI_Snapshot());
    CODE("InitICP inactive", FTI_InitICP(1, 1, false));
    CODE("InitICP", FTI_InitICP(1, 1, true));
    CODE("AddVarICP", FTI_AddVarICP(1));
    CODE("FinalizeICP", FTI_FinalizeICP());
    CODE("Finalize", FTI_Finalize());
}

/* FTI_Init refusing configurations: argv holds the config files to try. */
static void bad_configs(int n, char** configs) {
    CODE("Init NULL", FTI_Init(NULL, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++) {
        char label[64];
        snprintf(label, sizeof label, "Init config %d", i);
        CODE(label, FTI_Init(configs[i], MPI_COMM_WORLD));
        CODE("Status", FTI_Status());
    }
}

static void protect_both(void) {
    FTI_Protect(1, ints, 4, FTI_INTG);
    FTI_Protect(2, reals, 8, FTI_DBLE);
}

/* A normal run: checkpoints, levels, roll-back recovery, stored sizes, ICP, injection. */
static void fresh(char* config) {
    CODE("Init", FTI_Init(config, MPI_COMM_WORLD));
    CODE("Status", FTI_Status());
    CODE("Checkpoint level 0", FTI_Checkpoint(1, 0));
    CODE("Checkpoint level 5", FTI_Checkpoint(1, 5));
    CODE("Recover without checkpoint", FTI_Recover());
    CODE("RecoverVarInit normal run", FTI_RecoverVarInit());
    CODE("RecoverVar normal run", FTI_RecoverVar(1));
    CODE("RecoverVarFinalize normal run", FTI_RecoverVarFinalize());
    SHOW("GetStoredSize before checkpoint %ld", FTI_GetStoredSize(1));
    SHOW("Realloc normal run unchanged %d", FTI_Realloc(1, ints) == (void*)ints);

    fill(1);
    protect_both();
    /* The same memory under a second id, as C allows. */
    CODE("Protect alias", FTI_Protect(3, ints, 4, FTI_INTG));
    CODE("Checkpoint L1", FTI_Checkpoint(1, 1));
    SHOW("GetStoredSize %ld %ld %ld unknown %ld", FTI_GetStoredSize(1), FTI_GetStoredSize(2),
         FTI_GetStoredSize(3), FTI_GetStoredSize(9));
    fill(2);
    CODE("Checkpoint L4", FTI_Checkpoint(2, 4));
    CODE("Checkpoint L2 alone", FTI_Checkpoint(3, 2));
    CODE("Checkpoint L3 alone", FTI_Checkpoint(3, 3));
    fill(3);
    CODE("Recover to last checkpoint", FTI_Recover());
    SHOW("holds checkpoint 2 %d", holds(2));

    static double more[9];
    CODE("Protect new dataset", FTI_Protect(4, more, 9, FTI_DBLE));
    CODE("Recover with one more dataset", FTI_Recover());
    CODE("Checkpoint 4 datasets", FTI_Checkpoint(4, 1));
    CODE("Protect resized", FTI_Protect(4, more, 8, FTI_DBLE));
    CODE("Recover with a resized dataset", FTI_Recover());
    CODE("Protect size back", FTI_Protect(4, more, 9, FTI_DBLE));
    CODE("Recover", FTI_Recover());

    CODE("BitFlip int dataset", FTI_BitFlip(0));
    CODE("BitFlip no dataset", FTI_BitFlip(99));
    /* [injection] index is a byte offset (FTI adds it to a void*): 8 is more[1]. */
    for (int i = 0; i < 9; i++) more[i] = i + 0.5;
    CODE("BitFlip", FTI_BitFlip(3));
    SHOW("sign of more[1] flipped %d, more[8] untouched %d", more[1] == -1.5, more[8] == 8.5);
    CODE("BitFlip after the last", FTI_BitFlip(3));

    CODE("InitICP inactive", FTI_InitICP(5, 1, false));
    CODE("AddVarICP inactive", FTI_AddVarICP(1));
    CODE("FinalizeICP inactive", FTI_FinalizeICP());
    CODE("InitICP level 7", FTI_InitICP(5, 7, true));
    CODE("AddVarICP after failed init", FTI_AddVarICP(1));
    CODE("FinalizeICP after failed init", FTI_FinalizeICP());
    CODE("InitICP", FTI_InitICP(5, 1, true));
    CODE("AddVarICP unprotected", FTI_AddVarICP(9));
    CODE("AddVarICP", FTI_AddVarICP(1));
    CODE("AddVarICP twice", FTI_AddVarICP(1));
    CODE("Checkpoint during ICP", FTI_Checkpoint(7, 1));
    CODE("FinalizeICP incomplete", FTI_FinalizeICP());
    fill(4);
    CODE("InitICP L4", FTI_InitICP(6, 4, true));
    CODE("AddVarICP 4", FTI_AddVarICP(4));
    CODE("AddVarICP 2", FTI_AddVarICP(2));
    CODE("AddVarICP 3", FTI_AddVarICP(3));
    CODE("AddVarICP 1", FTI_AddVarICP(1));
    CODE("FinalizeICP", FTI_FinalizeICP());
    fill(5);
    CODE("Recover to the ICP checkpoint", FTI_Recover());
    SHOW("holds checkpoint 6 %d", holds(4));
    CODE("Finalize", FTI_Finalize());
    CODE("Finalize again", FTI_Finalize());
}

/* FTI_Snapshot with a 1 s L1 interval: SCES until the clock says a checkpoint is due. */
static void snapshot(char* config) {
    CODE("Init", FTI_Init(config, MPI_COMM_WORLD));
    fill(1);
    protect_both();
    int other = 0, done = 0;
    double start = MPI_Wtime();
    while (done == 0 && MPI_Wtime() - start < 20) {
        int rc = FTI_Snapshot();
        if (rc == FTI_DONE)
            done = 1;
        else if (rc != FTI_SCES)
            other = rc;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    /* The clock measures iterations first: no checkpoint right away. */
    SHOW("Snapshot took a checkpoint %d, other codes %d, not at once %d", done, other,
         MPI_Wtime() - start > 0.5);
    SHOW("GetStoredSize %ld", FTI_GetStoredSize(2));
    CODE("Finalize", FTI_Finalize());
}

/* Limits: 256 datasets, sizes, a second FTI_Init. */
static void limits(char* config) {
    static char bytes[300];
    CODE("Init", FTI_Init(config, MPI_COMM_WORLD));
    CODE("Init again", FTI_Init(config, MPI_COMM_WORLD));
    CODE("Protect negative count", FTI_Protect(1, bytes, -1, FTI_CHAR));
    FTIT_type negative = FTI_CHAR;
    negative.size = -4;
    CODE("Protect negative size", FTI_Protect(1, bytes, 1, negative));
    int refused = 0;
    for (int id = 0; id < 256; id++) refused += FTI_Protect(id, bytes + id, 1, FTI_CHAR) != 0;
    SHOW("Protect 256 refused %d", refused);
    CODE("Protect 257th", FTI_Protect(256, bytes, 1, FTI_CHAR));
    CODE("Protect again an existing id", FTI_Protect(7, bytes, 2, FTI_CHAR));
    FTIT_type big;
    FTI_InitType(&big, 1 << 30);
    CODE("Protect overflowing size", FTI_Protect(8, bytes, 1L << 40, big));
    CODE("Checkpoint NULL dataset", (FTI_Protect(9, NULL, 4, FTI_CHAR), FTI_Checkpoint(1, 1)));
    CODE("Finalize", FTI_Finalize());
}

/* First run of the restart scenarios: checkpoint 1 of fill(1), then a crash. */
static void prepare(char* config) {
    CODE("Init", FTI_Init(config, MPI_COMM_WORLD));
    fill(1);
    protect_both();
    CODE("Checkpoint", FTI_Checkpoint(1, 1));
}

/* A restart recovering with FTI_RecoverVar, then FTI_Snapshot. */
static void restart_vars(char* config) {
    CODE("Init", FTI_Init(config, MPI_COMM_WORLD));
    CODE("Status", FTI_Status());
    memset(ints, 0, sizeof ints);
    memset(reals, 0, sizeof reals);
    static double wrong[9];
    CODE("RecoverVar unprotected", FTI_RecoverVar(1));
    FTI_Protect(1, ints, 4, FTI_INTG);
    CODE("Recover one dataset of two", FTI_Recover());
    FTI_Protect(2, wrong, 9, FTI_DBLE);
    CODE("Recover wrong size", FTI_Recover());
    CODE("RecoverVar wrong size", FTI_RecoverVar(2));
    CODE("RecoverVarFinalize without init", FTI_RecoverVarFinalize());
    CODE("RecoverVarInit", FTI_RecoverVarInit());
    CODE("RecoverVar 1", FTI_RecoverVar(1));
    FTI_Protect(2, reals, 8, FTI_DBLE);
    CODE("RecoverVar 2", FTI_RecoverVar(2));
    CODE("RecoverVarFinalize", FTI_RecoverVarFinalize());
    SHOW("holds checkpoint 1 %d", holds(1));
    CODE("Status after RecoverVar", FTI_Status());
    memset(ints, 0, sizeof ints);
    CODE("Snapshot recovers", FTI_Snapshot());
    SHOW("holds checkpoint 1 %d", holds(1));
    CODE("Status", FTI_Status());
    CODE("Checkpoint", FTI_Checkpoint(2, 1));
    CODE("Finalize", FTI_Finalize());
}

/* A restart that recovers one dataset and checkpoints before FTI_Recover, as FTI allows. */
static void restart_checkpoint(char* config) {
    CODE("Init", FTI_Init(config, MPI_COMM_WORLD));
    protect_both();
    CODE("RecoverVarInit", FTI_RecoverVarInit());
    CODE("RecoverVar 1", FTI_RecoverVar(1));
    CODE("RecoverVarFinalize", FTI_RecoverVarFinalize());
    fill(2);
    CODE("Checkpoint during the restart", FTI_Checkpoint(2, 4));
    CODE("Status", FTI_Status());
    fill(3);
    CODE("RecoverVar from the new checkpoint", FTI_RecoverVar(2));
    SHOW("reals of checkpoint 2 %d", reals[7] == 2 + 7 / 8.0 && ints[0] == 30);
    CODE("Recover", FTI_Recover());
    SHOW("holds checkpoint 2 %d", holds(2));
    CODE("Status", FTI_Status());
    CODE("Finalize", FTI_Finalize());
}

/* A restart requested by the config whose checkpoints are gone. */
static void lost(char* config) {
    CODE("Init", FTI_Init(config, MPI_COMM_WORLD));
    CODE("Status", FTI_Status());
    CODE("Recover", FTI_Recover());
    CODE("RecoverVarInit", FTI_RecoverVarInit());
    fill(1);
    protect_both();
    CODE("Checkpoint", FTI_Checkpoint(1, 1));
    fill(2);
    CODE("Recover after a checkpoint", FTI_Recover());
    SHOW("holds checkpoint 1 %d", holds(1));
    CODE("Finalize", FTI_Finalize());
}

/* keep_last_ckpt = 1: FTI_Finalize keeps the last checkpoint, the next run restarts from it. */
static void keep(char* config) {
    CODE("Init", FTI_Init(config, MPI_COMM_WORLD));
    fill(1);
    protect_both();
    CODE("Checkpoint", FTI_Checkpoint(1, 1));
    CODE("Finalize", FTI_Finalize());
}

static void keep_restart(char* config) {
    CODE("Init", FTI_Init(config, MPI_COMM_WORLD));
    CODE("Status", FTI_Status());
    protect_both();
    SHOW("GetStoredSize %ld", FTI_GetStoredSize(2));
    CODE("Recover", FTI_Recover());
    SHOW("holds checkpoint 1 %d", holds(1));
    CODE("Status", FTI_Status());
    CODE("Finalize", FTI_Finalize());
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: codes SCENARIO [CONFIG...]\n");
        return 2;
    }
    const char* s = argv[1];
    if (strcmp(s, "nompi") == 0) {
        CODE("Init without MPI", FTI_Init(argv[2], MPI_COMM_WORLD));
        return 0;
    }
    MPI_Init(&argc, &argv);
    if (strcmp(s, "uninitialized") == 0) uninitialized();
    else if (strcmp(s, "configs") == 0) bad_configs(argc - 2, argv + 2);
    else if (strcmp(s, "fresh") == 0) fresh(argv[2]);
    else if (strcmp(s, "snapshot") == 0) snapshot(argv[2]);
    else if (strcmp(s, "limits") == 0) limits(argv[2]);
    else if (strcmp(s, "prepare") == 0) prepare(argv[2]);
    else if (strcmp(s, "restart-vars") == 0) restart_vars(argv[2]);
    else if (strcmp(s, "restart-checkpoint") == 0) restart_checkpoint(argv[2]);
    else if (strcmp(s, "lost") == 0) lost(argv[2]);
    else if (strcmp(s, "per-rank") == 0) {
        /* Each rank its own config file: one rank that cannot load its own fails them all. */
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        SHOW("rank %d Init %d", rank, FTI_Init(argv[2 + rank], MPI_COMM_WORLD));
    }
    else if (strcmp(s, "keep") == 0) keep(argv[2]);
    else if (strcmp(s, "keep-restart") == 0) keep_restart(argv[2]);
    else {
        fprintf(stderr, "unknown scenario %s\n", s);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}
