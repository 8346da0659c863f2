#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/rsa.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/obj_mac.h>
#include <openssl/hmac.h>

/* Macros built from other macros are not imported into Swift. */
static const int tb_EVP_PKEY_PUBLIC_KEY = EVP_PKEY_PUBLIC_KEY;
static const int tb_EVP_PKEY_KEYPAIR = EVP_PKEY_KEYPAIR;
static const int tb_EVP_CTRL_GCM_GET_TAG = EVP_CTRL_GCM_GET_TAG;
static const int tb_EVP_CTRL_GCM_SET_TAG = EVP_CTRL_GCM_SET_TAG;
static const int tb_RSA_PKCS1_PSS_PADDING = RSA_PKCS1_PSS_PADDING;
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
/* RFC 4514 text of a distinguished name (a macro of macros). */
static const unsigned long tb_XN_FLAG_RFC2253 = XN_FLAG_RFC2253;
