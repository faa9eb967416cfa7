//! Typed trees: a [`Tree`] read and written through a [`Codec`] for its keys and one for its
//! values. A layer over the byte API — nothing below knows of it, and users who stay with bytes
//! pay nothing. The integer codecs keep their order in the bytes, so ranges and `first`/`last`
//! follow the numbers.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::ops::Bound;

use crate::error::{Error, Result};
use crate::tree::Tree;
use crate::txn::Transaction;

/// How a type becomes the bytes a tree stores, and back.
pub trait Codec {
    /// What is written: a borrowed form (`str`, `[u8]`) or the value itself.
    type Item: ?Sized;
    /// What is read back.
    type Owned;
    /// The stored bytes of `item` (borrowed where they are the item's own).
    ///
    /// # Errors
    /// The item cannot be encoded ([`Error::Codec`]).
    fn encode(item: &Self::Item) -> Result<Cow<'_, [u8]>>;
    /// The item stored as `bytes`.
    ///
    /// # Errors
    /// The bytes are not an encoding of this codec ([`Error::Codec`]).
    fn decode(bytes: &[u8]) -> Result<Self::Owned>;
}

/// Bytes as they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bytes;

impl Codec for Bytes {
    type Item = [u8];
    type Owned = Vec<u8>;
    fn encode(item: &[u8]) -> Result<Cow<'_, [u8]>> {
        Ok(Cow::Borrowed(item))
    }
    fn decode(bytes: &[u8]) -> Result<Vec<u8>> {
        Ok(bytes.to_vec())
    }
}

/// UTF-8 text, as its bytes (byte order is code point order).
#[derive(Debug, Clone, Copy, Default)]
pub struct Str;

impl Codec for Str {
    type Item = str;
    type Owned = String;
    fn encode(item: &str) -> Result<Cow<'_, [u8]>> {
        Ok(Cow::Borrowed(item.as_bytes()))
    }
    fn decode(bytes: &[u8]) -> Result<String> {
        String::from_utf8(bytes.to_vec()).map_err(|e| codec_error(format!("not UTF-8 text: {e}")))
    }
}

/// An integer in big-endian bytes, its sign bit flipped for the signed types: the bytes sort as
/// the numbers do. For `u8` to `u128` and `i8` to `i128`; not for `usize` or `isize`, whose
/// width depends on the machine that wrote the file.
#[derive(Debug, Clone, Copy, Default)]
pub struct BigEndian<T>(PhantomData<T>);

macro_rules! big_endian {
    ($($t:ty => $flip:expr),* $(,)?) => {$(
        impl Codec for BigEndian<$t> {
            type Item = $t;
            type Owned = $t;
            fn encode(item: &$t) -> Result<Cow<'_, [u8]>> {
                Ok(Cow::Owned((*item ^ $flip).to_be_bytes().to_vec()))
            }
            fn decode(bytes: &[u8]) -> Result<$t> {
                let array = bytes.try_into().map_err(|_| {
                    codec_error(format!(
                        "{} bytes, not the {} of a {}",
                        bytes.len(),
                        std::mem::size_of::<$t>(),
                        stringify!($t)
                    ))
                })?;
                Ok(<$t>::from_be_bytes(array) ^ $flip)
            }
        }
    )*};
}

big_endian! {
    u8 => 0, u16 => 0, u32 => 0, u64 => 0, u128 => 0,
    i8 => i8::MIN, i16 => i16::MIN, i32 => i32::MIN, i64 => i64::MIN, i128 => i128::MIN,
}

/// Any serde type, in postcard's compact encoding (feature `serde`). The bytes do not sort as
/// the values do: for values, or keys looked up but not ranged over. A key is found by its
/// bytes, so it must encode one way only: two keys equal as values but encoded apart (`0.0`
/// and `-0.0`, a `HashMap` whose entries come out in another order) are two keys. Stored bytes
/// decode only if they are one whole encoding: bytes left over after the value are
/// [`Error::Codec`].
#[cfg(feature = "serde")]
#[derive(Debug, Clone, Copy, Default)]
pub struct Serde<T>(PhantomData<T>);

#[cfg(feature = "serde")]
impl<T: serde::Serialize + serde::de::DeserializeOwned> Codec for Serde<T> {
    type Item = T;
    type Owned = T;
    fn encode(item: &T) -> Result<Cow<'_, [u8]>> {
        postcard::to_allocvec(item).map(Cow::Owned).map_err(|e| codec_error(format!("cannot encode: {e}")))
    }
    fn decode(bytes: &[u8]) -> Result<T> {
        // The whole of `bytes` must be the one value: bytes left over mean they were written
        // another way (postcard's `from_bytes` would drop them and return a value).
        match postcard::take_from_bytes(bytes) {
            Ok((item, [])) => Ok(item),
            Ok((_, rest)) => Err(codec_error(format!(
                "cannot decode: {} bytes left over after the value's {}",
                rest.len(),
                bytes.len() - rest.len()
            ))),
            Err(e) => Err(codec_error(format!("cannot decode: {e}"))),
        }
    }
}

fn codec_error(reason: String) -> Error {
    Error::Codec { reason }
}

/// A [`Tree`] whose keys are written with codec `K` and values with codec `V`. Cheap to clone;
/// the same tree may be read through its byte handle ([`TypedTree::bytes`]) too.
///
/// ```
/// use swizzledb::typed::{BigEndian, Str, TypedTree};
/// # let dir = tempfile::tempdir()?;
/// # let db = swizzledb::Database::builder().create(dir.path().join("db.swz"))?;
/// let ages: TypedTree<Str, BigEndian<u32>> = TypedTree::new(db.create_tree("ages")?);
/// ages.upsert("alice", &31)?;
/// ages.upsert("bob", &27)?;
/// assert_eq!(ages.get("alice")?, Some(31));
/// let all: Vec<(String, u32)> = ages.iter().collect::<Result<_, _>>()?;
/// assert_eq!(all, [("alice".to_string(), 31), ("bob".to_string(), 27)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TypedTree<K: Codec, V: Codec> {
    tree: Tree,
    codecs: PhantomData<fn() -> (K, V)>,
}

impl<K: Codec, V: Codec> Clone for TypedTree<K, V> {
    fn clone(&self) -> Self {
        TypedTree { tree: self.tree.clone(), codecs: PhantomData }
    }
}

type Pair<K, V> = (<K as Codec>::Owned, <V as Codec>::Owned);

impl<K: Codec, V: Codec> TypedTree<K, V> {
    /// `tree`, read and written through `K` and `V`.
    #[must_use]
    pub fn new(tree: Tree) -> Self {
        TypedTree { tree, codecs: PhantomData }
    }

    /// The byte handle of the same tree.
    #[must_use]
    pub fn bytes(&self) -> &Tree {
        &self.tree
    }

    /// The value of `key` ([`Tree::get`]).
    ///
    /// # Errors
    /// As [`Tree::get`], and the codecs'.
    pub fn get(&self, key: &K::Item) -> Result<Option<V::Owned>> {
        self.tree.get(&K::encode(key)?)?.map(|v| V::decode(&v)).transpose()
    }

    /// Inserts a new record ([`Tree::insert`]).
    ///
    /// # Errors
    /// As [`Tree::insert`], and the codecs'.
    pub fn insert(&self, key: &K::Item, value: &V::Item) -> Result<()> {
        Ok(self.tree.insert(&K::encode(key)?, &V::encode(value)?)?)
    }

    /// Inserts or replaces a record; whether it existed ([`Tree::upsert`]).
    ///
    /// # Errors
    /// As [`Tree::upsert`], and the codecs'.
    pub fn upsert(&self, key: &K::Item, value: &V::Item) -> Result<bool> {
        Ok(self.tree.upsert(&K::encode(key)?, &V::encode(value)?)?)
    }

    /// Deletes a record; whether it existed ([`Tree::delete`]).
    ///
    /// # Errors
    /// As [`Tree::delete`], and the key codec's.
    pub fn delete(&self, key: &K::Item) -> Result<bool> {
        Ok(self.tree.delete(&K::encode(key)?)?)
    }

    /// The records with keys between `start` and `end`, decoded, in the order of the keys'
    /// bytes ([`Tree::range`]).
    ///
    /// # Errors
    /// Encoding a bound fails at once; the items carry the tree's and the codecs' errors.
    pub fn range(
        &self,
        start: Bound<&K::Item>,
        end: Bound<&K::Item>,
    ) -> Result<impl DoubleEndedIterator<Item = Result<Pair<K, V>>> + '_> {
        let (start, end) = (encode_bound::<K>(start)?, encode_bound::<K>(end)?);
        let inner = self.tree.range(as_ref(&start), as_ref(&end));
        Ok(inner.map(|r| decode_pair::<K, V>(r.map_err(Error::from))))
    }

    /// Every record, decoded, in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Result<Pair<K, V>>> + '_ {
        self.tree
            .range(Bound::Unbounded, Bound::Unbounded)
            .map(|r| decode_pair::<K, V>(r.map_err(Error::from)))
    }

    /// The first record in key order ([`Tree::first`]).
    ///
    /// # Errors
    /// As [`Tree::first`], and the codecs'.
    pub fn first(&self) -> Result<Option<Pair<K, V>>> {
        self.tree.first()?.map(|kv| decode_pair::<K, V>(Ok(kv))).transpose()
    }

    /// The last record in key order ([`Tree::last`]).
    ///
    /// # Errors
    /// As [`Tree::last`], and the codecs'.
    pub fn last(&self) -> Result<Option<Pair<K, V>>> {
        self.tree.last()?.map(|kv| decode_pair::<K, V>(Ok(kv))).transpose()
    }

    /// The records whose key's encoding starts with `prefix`'s, decoded, in key order
    /// ([`Tree::scan_prefix`]). A prefix is one of the key codec's bytes: for [`Str`] and
    /// [`Bytes`] any leading part of a key; for a fixed-width codec such as [`BigEndian`] a
    /// whole key. The iterator is double-ended (`.rev()` reads from the last).
    ///
    /// # Errors
    /// Encoding the prefix fails at once; the items carry the tree's and the codecs' errors.
    pub fn scan_prefix(
        &self,
        prefix: &K::Item,
    ) -> Result<impl DoubleEndedIterator<Item = Result<Pair<K, V>>> + '_> {
        let prefix = K::encode(prefix)?;
        Ok(self.tree.scan_prefix(&prefix).map(|r| decode_pair::<K, V>(r.map_err(Error::from))))
    }

    /// The number of records ([`Tree::len`]).
    ///
    /// # Errors
    /// As [`Tree::len`].
    pub fn len(&self) -> Result<usize> {
        Ok(self.tree.len()?)
    }

    /// Whether the tree holds no record ([`Tree::is_empty`]).
    ///
    /// # Errors
    /// As [`Tree::is_empty`].
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.tree.is_empty()?)
    }

    /// An estimate of the number of records ([`Tree::approximate_len`]).
    ///
    /// # Errors
    /// As [`Tree::approximate_len`].
    pub fn approximate_len(&self) -> Result<u64> {
        Ok(self.tree.approximate_len()?)
    }

    /// Sets `key` to `new` if its value is `expected`, atomically ([`Tree::compare_and_swap`]):
    /// `None` as `expected` means absent, `None` as `new` deletes. `Ok(Err(current))` gives the
    /// value found, decoded, when it is not `expected` (nothing changed then).
    ///
    /// ```
    /// use swizzledb::typed::{BigEndian, Str, TypedTree};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = swizzledb::Database::builder().create(dir.path().join("db.swz"))?;
    /// let hits: TypedTree<Str, BigEndian<u64>> = TypedTree::new(db.create_tree("hits")?);
    /// let mut current = hits.get("/")?;
    /// loop {
    ///     let next = current.unwrap_or(0) + 1;
    ///     match hits.compare_and_swap("/", current.as_ref(), Some(&next))? {
    ///         Ok(()) => break,
    ///         Err(found) => current = found,
    ///     }
    /// }
    /// assert_eq!(hits.get("/")?, Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tree::compare_and_swap`], and the codecs' (a value found that `V` cannot decode).
    pub fn compare_and_swap(
        &self,
        key: &K::Item,
        expected: Option<&V::Item>,
        new: Option<&V::Item>,
    ) -> Result<std::result::Result<(), Option<V::Owned>>> {
        let expected = expected.map(V::encode).transpose()?;
        let new = new.map(V::encode).transpose()?;
        match self.tree.compare_and_swap(&K::encode(key)?, expected.as_deref(), new.as_deref())? {
            Ok(()) => Ok(Ok(())),
            Err(refused) => Ok(Err(refused.current.map(|v| V::decode(&v)).transpose()?)),
        }
    }

    /// The value of `key` in transaction `tx` ([`Transaction::get`]).
    ///
    /// # Errors
    /// As [`Transaction::get`], and the codecs'.
    pub fn get_in(&self, tx: &Transaction<'_>, key: &K::Item) -> Result<Option<V::Owned>> {
        tx.get(&self.tree, &K::encode(key)?)?.map(|v| V::decode(&v)).transpose()
    }

    /// Inserts or replaces a record in transaction `tx`; whether it existed
    /// ([`Transaction::put`]).
    ///
    /// # Errors
    /// As [`Transaction::put`], and the codecs'.
    pub fn put_in(&self, tx: &mut Transaction<'_>, key: &K::Item, value: &V::Item) -> Result<bool> {
        tx.put(&self.tree, &K::encode(key)?, &V::encode(value)?)
    }

    /// Inserts a new record in transaction `tx` ([`Transaction::insert`]).
    ///
    /// # Errors
    /// As [`Transaction::insert`] (the key exists: `TreeError::DuplicateKey`), and the
    /// codecs'.
    pub fn insert_in(&self, tx: &mut Transaction<'_>, key: &K::Item, value: &V::Item) -> Result<()> {
        tx.insert(&self.tree, &K::encode(key)?, &V::encode(value)?)
    }

    /// The records with keys between `start` and `end` as transaction `tx` reads them,
    /// decoded, in key order ([`Transaction::range`]: locked, or at the transaction's
    /// snapshot). The iterator is double-ended.
    ///
    /// # Errors
    /// Encoding a bound fails at once; the items carry the transaction's and the codecs'
    /// errors.
    pub fn range_in<'t>(
        &'t self,
        tx: &'t Transaction<'_>,
        start: Bound<&K::Item>,
        end: Bound<&K::Item>,
    ) -> Result<impl DoubleEndedIterator<Item = Result<Pair<K, V>>> + 't> {
        let (start, end) = (encode_bound::<K>(start)?, encode_bound::<K>(end)?);
        Ok(tx.range(&self.tree, as_ref(&start), as_ref(&end)).map(decode_pair::<K, V>))
    }

    /// Deletes a record in transaction `tx`; whether it existed ([`Transaction::delete`]).
    ///
    /// # Errors
    /// As [`Transaction::delete`], and the key codec's.
    pub fn delete_in(&self, tx: &mut Transaction<'_>, key: &K::Item) -> Result<bool> {
        tx.delete(&self.tree, &K::encode(key)?)
    }
}

fn encode_bound<K: Codec>(b: Bound<&K::Item>) -> Result<Bound<Vec<u8>>> {
    Ok(match b {
        Bound::Included(k) => Bound::Included(K::encode(k)?.into_owned()),
        Bound::Excluded(k) => Bound::Excluded(K::encode(k)?.into_owned()),
        Bound::Unbounded => Bound::Unbounded,
    })
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn decode_pair<K: Codec, V: Codec>(kv: Result<(Vec<u8>, Vec<u8>)>) -> Result<Pair<K, V>> {
    let (k, v) = kv?;
    Ok((K::decode(&k)?, V::decode(&v)?))
}
