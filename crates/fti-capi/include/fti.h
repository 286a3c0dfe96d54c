/*
 * fti.h - FTI 1.1's C API (Fault Tolerance Interface), implemented by fti-rs's libfti.
 *
 * Source compatible with FTI 1.1's header: same functions, constants, types (LP64 layouts) and
 * globals, plus the incremental checkpoint and variable recovery functions of later FTI
 * releases. Checkpoints are FTI-FF files (ckpt_io = 3). Link with -lfti (and MPI).
 * Semantics and differences: docs/c-api.md.
 */
#ifndef _FTI_H
#define _FTI_H

#include <mpi.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
#define FTI_SCES 0  /* success */
#define FTI_NSCS -1 /* failure */
#define FTI_NREC -2 /* recovery failed */
#define FTI_DONE 1  /* a checkpoint was taken (FTI_Checkpoint, FTI_Snapshot) */

/* Message priorities. */
#define FTI_DBUG 1
#define FTI_INFO 2
#define FTI_WARN 3
#define FTI_EROR 4

/* Head-process tokens (the level L travels as FTI_BASE + L). */
#define FTI_BASE 990
#define FTI_CKTW 991
#define FTI_XORW 992
#define FTI_RSEW 993
#define FTI_PFSW 994
#define FTI_ENDW 995
#define FTI_REJW 996

/* I/O modes ([basic] ckpt_io = mode - 1000); this library writes FTI-FF only. */
#define FTI_IO_POSIX 1001
#define FTI_IO_MPI 1002
#define FTI_IO_FTIFF 1003
#ifdef ENABLE_SIONLIB
#define FTI_IO_SIONLIB 1004
#endif
#define FTI_IO_HDF5 1005

#define FTI_BUFS 256 /* capacity of names and tables */
#define FTI_WORD 16  /* Reed-Solomon word size */

#define MD5_DIGEST_LENGTH 16
#define MD5_DIGEST_STRING_LENGTH 33

#define RED "\x1B[31m"
#define ORG "\x1B[38;5;202m"
#define GRN "\x1B[32m"
#define RESET "\x1B[0m"

typedef struct FTIT_complexType FTIT_complexType;
typedef struct FTIT_H5Group FTIT_H5Group;

/* An element type: passed by value to FTI_Protect, which uses its id and size. */
typedef struct FTIT_type {
    int id;                      /* 0..10 predefined, then 11, 12, ... */
    int size;                    /* element size in bytes */
    FTIT_complexType* structure; /* NULL for a simple type */
    FTIT_H5Group* h5group;       /* HDF5 group (unused without HDF5) */
} FTIT_type;

/* One field of a complex type. */
typedef struct FTIT_typeField {
    int typeID;
    int offset;
    int rank;
    int dimLength[32];
    char name[FTI_BUFS];
} FTIT_typeField;

/* The structure of a complex type (an HDF5 description; a sized opaque type here). */
struct FTIT_complexType {
    char name[FTI_BUFS];
    int length;
    FTIT_typeField field[FTI_BUFS];
};

/* An HDF5 group. */
struct FTIT_H5Group {
    int id;
    char name[FTI_BUFS];
    int childrenNo;
    int childrenID[FTI_BUFS];
};

/* Bit access to floating-point values (FTI_BitFlip). */
typedef union FTIT_double {
    double value;
    float floatval[2];
    char byte[8];
} FTIT_double;

typedef union FTIT_float {
    float value;
    char byte[4];
} FTIT_float;

/* FTI's internal structures: named by FTI 1.1's header, never needed by programs. */
typedef struct FTIFF_metaInfo FTIFF_metaInfo;
typedef struct FTIFF_dbvar FTIFF_dbvar;
typedef struct FTIFF_db FTIFF_db;
typedef struct FTIT_dataset FTIT_dataset;
typedef struct FTIT_metadata FTIT_metadata;
typedef struct FTIT_execution FTIT_execution;
typedef struct FTIT_configuration FTIT_configuration;
typedef struct FTIT_topology FTIT_topology;
typedef struct FTIT_checkpoint FTIT_checkpoint;
typedef struct FTIT_injection FTIT_injection;

/* The application's communicator: use it instead of MPI_COMM_WORLD after FTI_Init. */
extern MPI_Comm FTI_COMM_WORLD;

/* Predefined types, set by FTI_Init (ids 0 to 10). */
extern FTIT_type FTI_CHAR;
extern FTIT_type FTI_SHRT;
extern FTIT_type FTI_INTG;
extern FTIT_type FTI_LONG;
extern FTIT_type FTI_UCHR;
extern FTIT_type FTI_USHT;
extern FTIT_type FTI_UINT;
extern FTIT_type FTI_ULNG;
extern FTIT_type FTI_SFLT;
extern FTIT_type FTI_DBLE;
extern FTIT_type FTI_LDBE;

int FTI_Init(char* configFile, MPI_Comm globalComm);
int FTI_Status(void);
int FTI_InitType(FTIT_type* type, int size);
int FTI_InitComplexType(FTIT_type* newType, FTIT_complexType* typeDefinition, int length,
                        size_t size, char* name, FTIT_H5Group* h5group);
void FTI_AddSimpleField(FTIT_complexType* typeDefinition, FTIT_type* ftiType, size_t offset,
                        int id, char* name);
void FTI_AddComplexField(FTIT_complexType* typeDefinition, FTIT_type* ftiType, size_t offset,
                         int rank, int* dimLength, int id, char* name);
int FTI_InitGroup(FTIT_H5Group* h5group, char* name, FTIT_H5Group* parent);
int FTI_RenameGroup(FTIT_H5Group* h5group, char* name);
int FTI_Protect(int id, void* ptr, long count, FTIT_type type);
int FTI_DefineDataset(int id, int rank, int* dimLength, char* name, FTIT_H5Group* h5group);
long FTI_GetStoredSize(int id);
void* FTI_Realloc(int id, void* ptr);
int FTI_BitFlip(int datasetID);
int FTI_Checkpoint(int id, int level);
int FTI_Recover(void);
int FTI_Snapshot(void);
int FTI_Finalize(void);
int FTI_RecoverVar(int id);

/* Later FTI releases: incremental checkpoints and variable recovery. */
int FTI_InitICP(int id, int level, bool activate);
int FTI_AddVarICP(int varID);
int FTI_FinalizeICP(void);
int FTI_RecoverVarInit(void);
int FTI_RecoverVarFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* _FTI_H */
