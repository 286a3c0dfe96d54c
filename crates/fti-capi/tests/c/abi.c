/* The ABI of fti.h as a C program sees it: layouts, constants, prototypes (checked by the
 * compiler with -Werror), the predefined types and FTI_COMM_WORLD before and after FTI_Init,
 * and the type, group and dataset description functions. Usage: abi CONFIG */
#include <fti.h>

#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#define SHOW(...)                                                                              \
    do {                                                                                       \
        printf("= " __VA_ARGS__);                                                              \
        printf("\n");                                                                          \
    } while (0)

/* FTI 1.1's exact prototypes: a mismatch is a compile error with -Werror. */
static void prototypes(void) {
    int (*init)(char*, MPI_Comm) = FTI_Init;
    int (*status)(void) = FTI_Status;
    int (*init_type)(FTIT_type*, int) = FTI_InitType;
    int (*init_complex)(FTIT_type*, FTIT_complexType*, int, size_t, char*, FTIT_H5Group*) =
        FTI_InitComplexType;
    void (*add_simple)(FTIT_complexType*, FTIT_type*, size_t, int, char*) = FTI_AddSimpleField;
    void (*add_complex)(FTIT_complexType*, FTIT_type*, size_t, int, int*, int, char*) =
        FTI_AddComplexField;
    int (*init_group)(FTIT_H5Group*, char*, FTIT_H5Group*) = FTI_InitGroup;
    int (*rename_group)(FTIT_H5Group*, char*) = FTI_RenameGroup;
    int (*protect)(int, void*, long, FTIT_type) = FTI_Protect;
    int (*define)(int, int, int*, char*, FTIT_H5Group*) = FTI_DefineDataset;
    long (*stored)(int) = FTI_GetStoredSize;
    void* (*re)(int, void*) = FTI_Realloc;
    int (*flip)(int) = FTI_BitFlip;
    int (*ckpt)(int, int) = FTI_Checkpoint;
    int (*recover)(void) = FTI_Recover;
    int (*snapshot)(void) = FTI_Snapshot;
    int (*finalize)(void) = FTI_Finalize;
    int (*recover_var)(int) = FTI_RecoverVar;
    int (*init_icp)(int, int, bool) = FTI_InitICP;
    int (*add_icp)(int) = FTI_AddVarICP;
    int (*fin_icp)(void) = FTI_FinalizeICP;
    int (*rv_init)(void) = FTI_RecoverVarInit;
    int (*rv_fin)(void) = FTI_RecoverVarFinalize;
    void* all[] = {(void*)init,     (void*)status,      (void*)init_type, (void*)init_complex,
                   (void*)add_simple, (void*)add_complex, (void*)init_group, (void*)rename_group,
                   (void*)protect,  (void*)define,      (void*)stored,    (void*)re,
                   (void*)flip,     (void*)ckpt,        (void*)recover,   (void*)snapshot,
                   (void*)finalize, (void*)recover_var, (void*)init_icp,  (void*)add_icp,
                   (void*)fin_icp,  (void*)rv_init,     (void*)rv_fin};
    int linked = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) linked += all[i] != NULL;
    SHOW("functions %d", linked);
}

static void layouts(void) {
    SHOW("FTIT_type %zu %zu: id %zu size %zu structure %zu h5group %zu", sizeof(FTIT_type),
         alignof(FTIT_type), offsetof(FTIT_type, id), offsetof(FTIT_type, size),
         offsetof(FTIT_type, structure), offsetof(FTIT_type, h5group));
    SHOW("FTIT_typeField %zu: typeID %zu offset %zu rank %zu dimLength %zu name %zu",
         sizeof(FTIT_typeField), offsetof(FTIT_typeField, typeID),
         offsetof(FTIT_typeField, offset), offsetof(FTIT_typeField, rank),
         offsetof(FTIT_typeField, dimLength), offsetof(FTIT_typeField, name));
    SHOW("FTIT_complexType %zu: name %zu length %zu field %zu", sizeof(FTIT_complexType),
         offsetof(FTIT_complexType, name), offsetof(FTIT_complexType, length),
         offsetof(FTIT_complexType, field));
    SHOW("FTIT_H5Group %zu: id %zu name %zu childrenNo %zu childrenID %zu",
         sizeof(FTIT_H5Group), offsetof(FTIT_H5Group, id), offsetof(FTIT_H5Group, name),
         offsetof(FTIT_H5Group, childrenNo), offsetof(FTIT_H5Group, childrenID));
    SHOW("FTIT_double %zu FTIT_float %zu", sizeof(FTIT_double), sizeof(FTIT_float));
}

static void constants(void) {
    SHOW("codes %d %d %d %d", FTI_SCES, FTI_NSCS, FTI_NREC, FTI_DONE);
    SHOW("priorities %d %d %d %d", FTI_DBUG, FTI_INFO, FTI_WARN, FTI_EROR);
    SHOW("tokens %d %d %d %d %d %d %d", FTI_BASE, FTI_CKTW, FTI_XORW, FTI_RSEW, FTI_PFSW,
         FTI_ENDW, FTI_REJW);
    SHOW("io %d %d %d %d", FTI_IO_POSIX, FTI_IO_MPI, FTI_IO_FTIFF, FTI_IO_HDF5);
#ifdef FTI_IO_SIONLIB
    SHOW("sionlib defined");
#endif
    SHOW("bufs %d word %d md5 %d %d", FTI_BUFS, FTI_WORD, MD5_DIGEST_LENGTH,
         MD5_DIGEST_STRING_LENGTH);
    SHOW("colours %d %d %d %d", strcmp(RED, "\x1B[31m"), strcmp(ORG, "\x1B[38;5;202m"),
         strcmp(GRN, "\x1B[32m"), strcmp(RESET, "\x1B[0m"));
}

static void predefined(const char* when) {
    FTIT_type all[] = {FTI_CHAR, FTI_SHRT, FTI_INTG, FTI_LONG, FTI_UCHR, FTI_USHT,
                       FTI_UINT, FTI_ULNG, FTI_SFLT, FTI_DBLE, FTI_LDBE};
    char line[512];
    size_t at = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        at += snprintf(line + at, sizeof line - at, " %d:%d%s", all[i].id, all[i].size,
                       all[i].structure == NULL ? "" : "!");
    }
    SHOW("types %s%s", when, line);
}

static void types(void) {
    FTIT_type a, b;
    int ra = FTI_InitType(&a, 12);
    int rb = FTI_InitType(&b, 3);
    SHOW("InitType %d %d id %d size %d structure %d", ra, rb, a.id, a.size, a.structure == NULL);
    SHOW("second type id %d", b.id);

    typedef struct {
        int n;
        double xyz[3];
    } Point;
    static FTIT_complexType def, bad;
    FTIT_type point;
    int dims[1] = {3};
    FTI_AddSimpleField(&def, &FTI_INTG, offsetof(Point, n), 0, "n");
    FTI_AddComplexField(&def, &FTI_DBLE, offsetof(Point, xyz), 1, dims, 1, NULL);
    int rc = FTI_InitComplexType(&point, &def, 2, sizeof(Point), "point", NULL);
    SHOW("InitComplexType %d id %d size %d structure %d name %s length %d", rc, point.id,
         point.size, point.structure == &def, def.name, def.length);
    SHOW("fields %s:%d@%d rank %d dim %d, %s:%d@%d rank %d dim %d", def.field[0].name,
         def.field[0].typeID, def.field[0].offset, def.field[0].rank,
         def.field[0].dimLength[0], def.field[1].name, def.field[1].typeID,
         def.field[1].offset, def.field[1].rank, def.field[1].dimLength[0]);
    FTIT_type unnamed;
    rc = FTI_InitComplexType(&unnamed, &def, 1, 4, NULL, NULL);
    SHOW("unnamed %d %s", rc, def.name);

    FTIT_type t;
    int zero[1] = {0};
    FTI_AddSimpleField(&bad, &FTI_INTG, 0, 0, NULL);
    int length0 = FTI_InitComplexType(&t, &bad, 0, 4, NULL, NULL);
    int length256 = FTI_InitComplexType(&t, &bad, 256, 4, NULL, NULL);
    FTI_AddComplexField(&bad, &FTI_INTG, 0, 0, dims, 1, NULL);
    int rank0 = FTI_InitComplexType(&t, &bad, 2, 4, NULL, NULL);
    FTI_AddComplexField(&bad, &FTI_INTG, 0, 33, dims, 1, NULL);
    int rank33 = FTI_InitComplexType(&t, &bad, 2, 4, NULL, NULL);
    FTI_AddComplexField(&bad, &FTI_INTG, 0, 1, zero, 1, NULL);
    int dim0 = FTI_InitComplexType(&t, &bad, 2, 4, NULL, NULL);
    SHOW("refused %d %d %d %d %d, field name %s", length0, length256, rank0, rank33, dim0,
         bad.field[0].name);
}

static void groups(void) {
    FTIT_H5Group grid, sub, other, ghost;
    int rc = FTI_InitGroup(&grid, "grid", NULL);
    SHOW("InitGroup %d id %d name %s children %d", rc, grid.id, grid.name, grid.childrenNo);
    SHOW("same name under root %d", FTI_InitGroup(&other, "grid", NULL));
    rc = FTI_InitGroup(&sub, "sub", &grid);
    SHOW("child %d id %d", rc, sub.id);
    SHOW("same name under grid %d", FTI_InitGroup(&other, "sub", &grid));
    SHOW("rename %d", FTI_RenameGroup(&sub, "renamed"));
    rc = FTI_InitGroup(&other, "sub", &grid);
    SHOW("name free again %d id %d, caller's name kept %s", rc, other.id, sub.name);
    ghost.id = 99;
    SHOW("unknown parent %d", FTI_InitGroup(&other, "x", &ghost));

    double m[12];
    int dims[2] = {3, 4}, wrong[2] = {3, 5};
    SHOW("protect %d", FTI_Protect(5, m, 12, FTI_DBLE));
    SHOW("DefineDataset %d %d %d %d %d %d", FTI_DefineDataset(5, 2, dims, "matrix", &grid),
         FTI_DefineDataset(5, 2, wrong, NULL, NULL), FTI_DefineDataset(5, 33, dims, NULL, NULL),
         FTI_DefineDataset(5, 2, NULL, NULL, NULL), FTI_DefineDataset(6, 2, dims, NULL, NULL),
         FTI_DefineDataset(5, 2, dims, NULL, &ghost));
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: abi CONFIG\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    prototypes();
    layouts();
    constants();
    predefined("before init");
    SHOW("FTI_COMM_WORLD before init null %d", FTI_COMM_WORLD == (MPI_Comm)0);
    SHOW("init %d", FTI_Init(argv[1], MPI_COMM_WORLD));
    predefined("after init");
    int cmp, size;
    MPI_Comm_compare(FTI_COMM_WORLD, MPI_COMM_WORLD, &cmp);
    MPI_Comm_size(FTI_COMM_WORLD, &size);
    SHOW("FTI_COMM_WORLD congruent %d ident %d size %d", cmp == MPI_CONGRUENT,
         FTI_COMM_WORLD == MPI_COMM_WORLD, size);
    types();
    groups();
    int finalized = FTI_Finalize();
    SHOW("finalize %d status %d", finalized, FTI_Status());
    MPI_Barrier(FTI_COMM_WORLD); /* still usable after FTI_Finalize, as with FTI */
    MPI_Finalize();
    return 0;
}
