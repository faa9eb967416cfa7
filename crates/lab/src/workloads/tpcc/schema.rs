//! The nine tables and two indexes: one tree each, keys and fixed-layout records.
//!
//! **Keys** are the primary-key columns in vmcache's order, each a 4-byte big-endian unsigned
//! integer (every id is positive), so byte order is key order. The customer-name index adds
//! `c_last` and `c_first` as their bytes followed by a 0 byte: names are alphanumeric, so a
//! shorter name sorts before its extensions, as in vmcache.
//!
//! **Records** are encoded at a fixed size, field by field in vmcache's order: integers 4 bytes,
//! timestamps and numbers (vmcache's `double`) 8 bytes, a `varchar(n)` a 2-byte length and `n`
//! bytes. Sizes thus match vmcache's in-memory structs (without their alignment padding).
//! Money is kept in whole cents and rates (tax, discount) in units of 1/10000, as `i64`, so
//! that the consistency conditions compare sums exactly.

use crate::workloads::WorkloadError;

/// The trees, in the order [`Tables`](super::workload::Tables) holds them.
pub const TREES: [&str; 11] = [
    "tpcc-warehouse",
    "tpcc-district",
    "tpcc-customer",
    "tpcc-customer-name",
    "tpcc-history",
    "tpcc-new-order",
    "tpcc-order",
    "tpcc-order-customer",
    "tpcc-order-line",
    "tpcc-item",
    "tpcc-stock",
];

/// A key of up to four 4-byte parts, built on the stack (the transactions build several per
/// record they touch).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    len: u8,
    bytes: [u8; 16],
}

impl std::ops::Deref for Key {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&show_key(self))
    }
}

/// Builds a key from up to four 4-byte big-endian parts.
#[must_use]
pub fn key<const N: usize>(parts: [u32; N]) -> Key {
    const { assert!(N <= 4, "keys have at most four parts") };
    let mut k = Key { len: (N * 4) as u8, bytes: [0; 16] };
    for (i, p) in parts.iter().enumerate() {
        k.bytes[i * 4..i * 4 + 4].copy_from_slice(&p.to_be_bytes());
    }
    k
}

/// The key part at `index` (4-byte big-endian).
#[must_use]
pub fn key_part(key: &[u8], index: usize) -> u32 {
    key.get(index * 4..index * 4 + 4).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Readable form of a key, for error messages.
#[must_use]
pub fn show_key(key: &[u8]) -> String {
    let parts: Vec<String> = key
        .chunks(4)
        .map(|c| {
            if c.len() == 4 {
                u32::from_be_bytes([c[0], c[1], c[2], c[3]]).to_string()
            } else {
                String::from_utf8_lossy(c).into_owned()
            }
        })
        .collect();
    format!("({})", parts.join(", "))
}

/// Key of the customer-name index: `(w, d, last\0, first\0)`.
#[must_use]
pub fn name_key(w: u32, d: u32, last: &[u8], first: &[u8]) -> Vec<u8> {
    let mut k = key([w, d]).to_vec();
    k.extend_from_slice(last);
    k.push(0);
    k.extend_from_slice(first);
    k.push(0);
    k
}

/// The range of the name index holding every customer `(w, d)` named `last`: `[from, to)`.
#[must_use]
pub fn name_range(w: u32, d: u32, last: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut from = key([w, d]).to_vec();
    from.extend_from_slice(last);
    let mut to = from.clone();
    from.push(0);
    to.push(1);
    (from, to)
}

/// A `varchar(N)`: up to `N` bytes.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Text<const N: usize> {
    len: u16,
    bytes: [u8; N],
}

impl<const N: usize> Text<N> {
    /// The first `N` bytes of `s`.
    #[must_use]
    pub fn new(s: &[u8]) -> Self {
        let len = s.len().min(N);
        let mut bytes = [0; N];
        bytes[..len].copy_from_slice(&s[..len]);
        Text { len: len as u16, bytes }
    }

    /// The bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl<const N: usize> Default for Text<N> {
    fn default() -> Self {
        Text { len: 0, bytes: [0; N] }
    }
}

impl<const N: usize> std::fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

/// Appends fields to a record buffer.
#[derive(Default)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn text<const N: usize>(&mut self, t: &Text<N>) {
        self.0.extend_from_slice(&t.len.to_le_bytes());
        self.0.extend_from_slice(&t.bytes);
    }
}

/// Reads fields of a record (its size was checked first).
pub struct Dec<'a>(&'a [u8]);

impl Dec<'_> {
    fn take<const K: usize>(&mut self) -> [u8; K] {
        let (head, rest) = self.0.split_at(K);
        self.0 = rest;
        head.try_into().unwrap_or([0; K])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
    fn text<const N: usize>(&mut self) -> Text<N> {
        let len = u16::from_le_bytes(self.take()).min(N as u16);
        Text { len, bytes: self.take() }
    }
}

/// A fixed-size record of one table.
pub trait Record: Sized {
    /// Its tree (for messages).
    const TABLE: &'static str;
    /// Encoded size in bytes.
    const SIZE: usize;
    /// Appends the fields.
    fn write(&self, e: &mut Enc);
    /// Reads the fields.
    fn read(d: &mut Dec<'_>) -> Self;

    /// The record's bytes.
    fn encode(&self) -> Vec<u8> {
        let mut e = Enc(Vec::with_capacity(Self::SIZE));
        self.write(&mut e);
        debug_assert_eq!(e.0.len(), Self::SIZE, "{}: encoded size", Self::TABLE);
        e.0
    }

    /// Appends the record's bytes to `out`.
    fn encode_into(&self, out: &mut Vec<u8>) {
        let mut e = Enc(std::mem::take(out));
        self.write(&mut e);
        *out = e.0;
    }

    /// Decodes a record, checking its size.
    ///
    /// # Errors
    /// [`WorkloadError::Corrupt`] if the size is wrong.
    fn decode(bytes: &[u8]) -> Result<Self, WorkloadError> {
        check_size::<Self>(bytes)?;
        Ok(Self::read(&mut Dec(bytes)))
    }
}

const fn text(n: usize) -> usize {
    2 + n
}

/// A value a [`Field`] holds, at its encoded size.
pub trait Scalar: Sized {
    /// Encoded size in bytes.
    const SIZE: usize;
    /// Reads it from the first `SIZE` bytes.
    fn load(b: &[u8]) -> Self;
    /// Writes it into the first `SIZE` bytes.
    fn store(&self, b: &mut [u8]);
}

impl Scalar for u32 {
    const SIZE: usize = 4;
    fn load(b: &[u8]) -> Self {
        u32::from_le_bytes(b[..4].try_into().unwrap_or([0; 4]))
    }
    fn store(&self, b: &mut [u8]) {
        b[..4].copy_from_slice(&self.to_le_bytes());
    }
}

impl Scalar for i64 {
    const SIZE: usize = 8;
    fn load(b: &[u8]) -> Self {
        i64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]))
    }
    fn store(&self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.to_le_bytes());
    }
}

impl<const N: usize> Scalar for Text<N> {
    const SIZE: usize = text(N);
    fn load(b: &[u8]) -> Self {
        Dec(&b[..text(N)]).text()
    }
    fn store(&self, b: &mut [u8]) {
        b[..2].copy_from_slice(&self.len.to_le_bytes());
        b[2..text(N)].copy_from_slice(&self.bytes);
    }
}

/// A field of record type `R` at a fixed byte offset of its encoding: read or changed in place,
/// without decoding the rest of the record (vmcache's transactions touch single fields of
/// records in the page the same way). A test checks every offset against [`Record::write`].
pub struct Field<R, T> {
    off: usize,
    _of: std::marker::PhantomData<fn() -> (R, T)>,
}

impl<R: Record, T: Scalar> Field<R, T> {
    const fn at(off: usize) -> Self {
        assert!(off + T::SIZE <= R::SIZE, "a field lies inside its record");
        Field { off, _of: std::marker::PhantomData }
    }

    /// The field's value in `rec`, an encoded record of `R` (its size checked by the caller).
    #[must_use]
    pub fn get(&self, rec: &[u8]) -> T {
        T::load(&rec[self.off..])
    }

    /// Sets the field in `rec`.
    pub fn set(&self, rec: &mut [u8], v: T) {
        v.store(&mut rec[self.off..]);
    }
}

/// Checks that `bytes` is an encoded record of `R` by its size, as [`Record::decode`] does.
///
/// # Errors
/// [`WorkloadError::Corrupt`] if the size is wrong.
pub fn check_size<R: Record>(bytes: &[u8]) -> Result<(), WorkloadError> {
    if bytes.len() == R::SIZE {
        Ok(())
    } else {
        Err(WorkloadError::Corrupt { table: R::TABLE, len: bytes.len(), expected: R::SIZE })
    }
}

/// The address columns warehouses and districts share.
#[derive(Clone, Debug, Default)]
pub struct Address {
    /// `*_name` (10).
    pub name: Text<10>,
    /// `*_street_1` (20).
    pub street_1: Text<20>,
    /// `*_street_2` (20).
    pub street_2: Text<20>,
    /// `*_city` (20).
    pub city: Text<20>,
    /// `*_state` (2).
    pub state: Text<2>,
    /// `*_zip` (9).
    pub zip: Text<9>,
}

impl Address {
    const SIZE: usize = text(10) + 3 * text(20) + text(2) + text(9);
    fn write(&self, e: &mut Enc) {
        e.text(&self.name);
        e.text(&self.street_1);
        e.text(&self.street_2);
        e.text(&self.city);
        e.text(&self.state);
        e.text(&self.zip);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        Address {
            name: d.text(),
            street_1: d.text(),
            street_2: d.text(),
            city: d.text(),
            state: d.text(),
            zip: d.text(),
        }
    }
}

/// WAREHOUSE, key `(w_id)`.
#[derive(Clone, Debug, Default)]
pub struct Warehouse {
    /// Name and address.
    pub address: Address,
    /// `w_tax`, in 1/10000.
    pub tax: i64,
    /// `w_ytd`, in cents.
    pub ytd: i64,
}

impl Record for Warehouse {
    const TABLE: &'static str = TREES[0];
    const SIZE: usize = Address::SIZE + 16;
    fn write(&self, e: &mut Enc) {
        self.address.write(e);
        e.i64(self.tax);
        e.i64(self.ytd);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        Warehouse { address: Address::read(d), tax: d.i64(), ytd: d.i64() }
    }
}

/// DISTRICT, key `(w_id, d_id)`.
#[derive(Clone, Debug, Default)]
pub struct District {
    /// Name and address.
    pub address: Address,
    /// `d_tax`, in 1/10000.
    pub tax: i64,
    /// `d_ytd`, in cents.
    pub ytd: i64,
    /// `d_next_o_id`.
    pub next_o_id: u32,
}

impl Record for District {
    const TABLE: &'static str = TREES[1];
    const SIZE: usize = Address::SIZE + 20;
    fn write(&self, e: &mut Enc) {
        self.address.write(e);
        e.i64(self.tax);
        e.i64(self.ytd);
        e.u32(self.next_o_id);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        District { address: Address::read(d), tax: d.i64(), ytd: d.i64(), next_o_id: d.u32() }
    }
}

/// CUSTOMER, key `(w_id, d_id, c_id)`.
#[derive(Clone, Debug, Default)]
pub struct Customer {
    /// `c_first` (16).
    pub first: Text<16>,
    /// `c_middle` (2).
    pub middle: Text<2>,
    /// `c_last` (16).
    pub last: Text<16>,
    /// `c_street_1` (20).
    pub street_1: Text<20>,
    /// `c_street_2` (20).
    pub street_2: Text<20>,
    /// `c_city` (20).
    pub city: Text<20>,
    /// `c_state` (2).
    pub state: Text<2>,
    /// `c_zip` (9).
    pub zip: Text<9>,
    /// `c_phone` (16).
    pub phone: Text<16>,
    /// `c_since`.
    pub since: i64,
    /// `c_credit`: `GC` or `BC` (2).
    pub credit: Text<2>,
    /// `c_credit_lim`, in cents.
    pub credit_lim: i64,
    /// `c_discount`, in 1/10000.
    pub discount: i64,
    /// `c_balance`, in cents.
    pub balance: i64,
    /// `c_ytd_payment`, in cents.
    pub ytd_payment: i64,
    /// `c_payment_cnt`.
    pub payment_cnt: i64,
    /// `c_delivery_cnt`.
    pub delivery_cnt: i64,
    /// `c_data` (500).
    pub data: Text<500>,
}

impl Record for Customer {
    const TABLE: &'static str = TREES[2];
    const SIZE: usize = 2 * text(16)
        + text(2)
        + 3 * text(20)
        + text(2)
        + text(9)
        + text(16)
        + 8
        + text(2)
        + 6 * 8
        + text(500);
    fn write(&self, e: &mut Enc) {
        e.text(&self.first);
        e.text(&self.middle);
        e.text(&self.last);
        e.text(&self.street_1);
        e.text(&self.street_2);
        e.text(&self.city);
        e.text(&self.state);
        e.text(&self.zip);
        e.text(&self.phone);
        e.i64(self.since);
        e.text(&self.credit);
        e.i64(self.credit_lim);
        e.i64(self.discount);
        e.i64(self.balance);
        e.i64(self.ytd_payment);
        e.i64(self.payment_cnt);
        e.i64(self.delivery_cnt);
        e.text(&self.data);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        Customer {
            first: d.text(),
            middle: d.text(),
            last: d.text(),
            street_1: d.text(),
            street_2: d.text(),
            city: d.text(),
            state: d.text(),
            zip: d.text(),
            phone: d.text(),
            since: d.i64(),
            credit: d.text(),
            credit_lim: d.i64(),
            discount: d.i64(),
            balance: d.i64(),
            ytd_payment: d.i64(),
            payment_cnt: d.i64(),
            delivery_cnt: d.i64(),
            data: d.text(),
        }
    }
}

/// The customer-name index, key `(w_id, d_id, c_last, c_first)`, value `c_id`.
#[derive(Clone, Debug, Default)]
pub struct CustomerName {
    /// `c_id`.
    pub c_id: u32,
}

impl Record for CustomerName {
    const TABLE: &'static str = TREES[3];
    const SIZE: usize = 4;
    fn write(&self, e: &mut Enc) {
        e.u32(self.c_id);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        CustomerName { c_id: d.u32() }
    }
}

/// HISTORY, key `(stream, sequence)` (vmcache's thread id and per-thread counter; TPC-C gives
/// history no key).
#[derive(Clone, Debug, Default)]
pub struct History {
    /// `h_c_id`.
    pub c_id: u32,
    /// `h_c_d_id`.
    pub c_d_id: u32,
    /// `h_c_w_id`.
    pub c_w_id: u32,
    /// `h_d_id`.
    pub d_id: u32,
    /// `h_w_id`.
    pub w_id: u32,
    /// `h_date`.
    pub date: i64,
    /// `h_amount`, in cents.
    pub amount: i64,
    /// `h_data` (24).
    pub data: Text<24>,
}

impl Record for History {
    const TABLE: &'static str = TREES[4];
    const SIZE: usize = 5 * 4 + 16 + text(24);
    fn write(&self, e: &mut Enc) {
        e.u32(self.c_id);
        e.u32(self.c_d_id);
        e.u32(self.c_w_id);
        e.u32(self.d_id);
        e.u32(self.w_id);
        e.i64(self.date);
        e.i64(self.amount);
        e.text(&self.data);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        History {
            c_id: d.u32(),
            c_d_id: d.u32(),
            c_w_id: d.u32(),
            d_id: d.u32(),
            w_id: d.u32(),
            date: d.i64(),
            amount: d.i64(),
            data: d.text(),
        }
    }
}

/// ORDER, key `(w_id, d_id, o_id)`.
#[derive(Clone, Debug, Default)]
pub struct Order {
    /// `o_c_id`.
    pub c_id: u32,
    /// `o_entry_d`.
    pub entry_d: i64,
    /// `o_carrier_id` (0: null).
    pub carrier_id: u32,
    /// `o_ol_cnt`.
    pub ol_cnt: i64,
    /// `o_all_local`.
    pub all_local: i64,
}

impl Record for Order {
    const TABLE: &'static str = TREES[6];
    const SIZE: usize = 4 + 8 + 4 + 16;
    fn write(&self, e: &mut Enc) {
        e.u32(self.c_id);
        e.i64(self.entry_d);
        e.u32(self.carrier_id);
        e.i64(self.ol_cnt);
        e.i64(self.all_local);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        Order { c_id: d.u32(), entry_d: d.i64(), carrier_id: d.u32(), ol_cnt: d.i64(), all_local: d.i64() }
    }
}

/// ORDER-LINE, key `(w_id, d_id, o_id, ol_number)`.
#[derive(Clone, Debug, Default)]
pub struct OrderLine {
    /// `ol_i_id`.
    pub i_id: u32,
    /// `ol_supply_w_id`.
    pub supply_w_id: u32,
    /// `ol_delivery_d` (0: null).
    pub delivery_d: i64,
    /// `ol_quantity`.
    pub quantity: i64,
    /// `ol_amount`, in cents.
    pub amount: i64,
    /// `ol_dist_info` (24).
    pub dist_info: Text<24>,
}

impl Record for OrderLine {
    const TABLE: &'static str = TREES[8];
    const SIZE: usize = 8 + 24 + text(24);
    fn write(&self, e: &mut Enc) {
        e.u32(self.i_id);
        e.u32(self.supply_w_id);
        e.i64(self.delivery_d);
        e.i64(self.quantity);
        e.i64(self.amount);
        e.text(&self.dist_info);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        OrderLine {
            i_id: d.u32(),
            supply_w_id: d.u32(),
            delivery_d: d.i64(),
            quantity: d.i64(),
            amount: d.i64(),
            dist_info: d.text(),
        }
    }
}

/// ITEM, key `(i_id)`.
#[derive(Clone, Debug, Default)]
pub struct Item {
    /// `i_im_id`.
    pub im_id: u32,
    /// `i_name` (24).
    pub name: Text<24>,
    /// `i_price`, in cents.
    pub price: i64,
    /// `i_data` (50).
    pub data: Text<50>,
}

impl Record for Item {
    const TABLE: &'static str = TREES[9];
    const SIZE: usize = 4 + text(24) + 8 + text(50);
    fn write(&self, e: &mut Enc) {
        e.u32(self.im_id);
        e.text(&self.name);
        e.i64(self.price);
        e.text(&self.data);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        Item { im_id: d.u32(), name: d.text(), price: d.i64(), data: d.text() }
    }
}

/// STOCK, key `(w_id, i_id)`.
#[derive(Clone, Debug, Default)]
pub struct Stock {
    /// `s_quantity`.
    pub quantity: i64,
    /// `s_dist_01` to `s_dist_10` (24 each).
    pub dist: [Text<24>; 10],
    /// `s_ytd`.
    pub ytd: i64,
    /// `s_order_cnt`.
    pub order_cnt: i64,
    /// `s_remote_cnt`.
    pub remote_cnt: i64,
    /// `s_data` (50).
    pub data: Text<50>,
}

impl Record for Stock {
    const TABLE: &'static str = TREES[10];
    const SIZE: usize = 8 + 10 * text(24) + 24 + text(50);
    fn write(&self, e: &mut Enc) {
        e.i64(self.quantity);
        for t in &self.dist {
            e.text(t);
        }
        e.i64(self.ytd);
        e.i64(self.order_cnt);
        e.i64(self.remote_cnt);
        e.text(&self.data);
    }
    fn read(d: &mut Dec<'_>) -> Self {
        let quantity = d.i64();
        let dist = std::array::from_fn(|_| d.text());
        Stock { quantity, dist, ytd: d.i64(), order_cnt: d.i64(), remote_cnt: d.i64(), data: d.text() }
    }
}

impl Warehouse {
    /// `w_tax`.
    pub const TAX: Field<Warehouse, i64> = Field::at(Address::SIZE);
}

impl District {
    /// `d_tax`.
    pub const TAX: Field<District, i64> = Field::at(Address::SIZE);
    /// `d_next_o_id`.
    pub const NEXT_O_ID: Field<District, u32> = Field::at(Address::SIZE + 16);
}

impl Customer {
    /// `c_discount`.
    pub const DISCOUNT: Field<Customer, i64> = Field::at(Customer::MONEY + 8);
    /// `c_balance`.
    pub const BALANCE: Field<Customer, i64> = Field::at(Customer::MONEY + 16);
    /// `c_delivery_cnt`.
    pub const DELIVERY_CNT: Field<Customer, i64> = Field::at(Customer::MONEY + 40);
    /// Offset of `c_credit_lim`, the first of the six 8-byte numbers.
    const MONEY: usize = 2 * text(16) + text(2) + 3 * text(20) + text(2) + text(9) + text(16) + 8 + text(2);
}

impl OrderLine {
    /// `ol_i_id`.
    pub const I_ID: Field<OrderLine, u32> = Field::at(0);
    /// `ol_delivery_d`.
    pub const DELIVERY_D: Field<OrderLine, i64> = Field::at(8);
    /// `ol_amount`.
    pub const AMOUNT: Field<OrderLine, i64> = Field::at(24);
}

impl Stock {
    /// `s_quantity`.
    pub const QUANTITY: Field<Stock, i64> = Field::at(0);
    /// `s_ytd`.
    pub const YTD: Field<Stock, i64> = Field::at(8 + 10 * text(24));
    /// `s_order_cnt`.
    pub const ORDER_CNT: Field<Stock, i64> = Field::at(16 + 10 * text(24));
    /// `s_remote_cnt`.
    pub const REMOTE_CNT: Field<Stock, i64> = Field::at(24 + 10 * text(24));

    /// `s_dist_xx` of district `d` (1 to 10).
    #[must_use]
    pub fn dist(d: u32) -> Field<Stock, Text<24>> {
        Field::at(8 + (d.clamp(1, 10) as usize - 1) * text(24))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field constant names the bytes `write` puts that field in: a record with distinct
    /// values reads back through the field, and a change made through it decodes as that change.
    #[test]
    fn fields_sit_where_records_are_encoded() {
        let t = |s: &[u8]| Text::<24>::new(s);
        let stock = Stock {
            quantity: 11,
            dist: std::array::from_fn(|i| t(&[b'a' + i as u8; 20])),
            ytd: 22,
            order_cnt: 33,
            remote_cnt: 44,
            data: Text::new(b"data"),
        };
        let mut b = stock.encode();
        assert_eq!(
            (
                Stock::QUANTITY.get(&b),
                Stock::YTD.get(&b),
                Stock::ORDER_CNT.get(&b),
                Stock::REMOTE_CNT.get(&b)
            ),
            (11, 22, 33, 44)
        );
        for d in 1..=10 {
            assert_eq!(Stock::dist(d).get(&b), stock.dist[d as usize - 1]);
        }
        Stock::QUANTITY.set(&mut b, -5);
        Stock::REMOTE_CNT.set(&mut b, 7);
        Stock::dist(10).set(&mut b, t(b"changed"));
        let back = Stock::decode(&b).unwrap();
        assert_eq!((back.quantity, back.ytd, back.remote_cnt, back.data), (-5, 22, 7, stock.data));
        assert_eq!((back.dist[9], back.dist[8]), (t(b"changed"), stock.dist[8]));

        let c = Customer { discount: 5, balance: -6, delivery_cnt: 7, payment_cnt: 8, ..Default::default() };
        let mut b = c.encode();
        assert_eq!(
            (Customer::DISCOUNT.get(&b), Customer::BALANCE.get(&b), Customer::DELIVERY_CNT.get(&b)),
            (5, -6, 7)
        );
        Customer::BALANCE.set(&mut b, 100);
        let back = Customer::decode(&b).unwrap();
        assert_eq!((back.balance, back.payment_cnt, back.discount), (100, 8, 5));

        let l =
            OrderLine { i_id: 9, supply_w_id: 3, delivery_d: 0, quantity: 4, amount: 55, dist_info: t(b"x") };
        let mut b = l.encode();
        assert_eq!((OrderLine::I_ID.get(&b), OrderLine::AMOUNT.get(&b)), (9, 55));
        OrderLine::DELIVERY_D.set(&mut b, 1234);
        let back = OrderLine::decode(&b).unwrap();
        assert_eq!((back.delivery_d, back.quantity, back.amount), (1234, 4, 55));

        let d = District { tax: 12, ytd: 13, next_o_id: 14, ..Default::default() };
        let mut b = d.encode();
        assert_eq!((District::TAX.get(&b), District::NEXT_O_ID.get(&b)), (12, 14));
        District::NEXT_O_ID.set(&mut b, 15);
        assert_eq!(District::decode(&b).unwrap().next_o_id, 15);
        let w = Warehouse { tax: 16, ytd: 17, ..Default::default() };
        assert_eq!(Warehouse::TAX.get(&w.encode()), 16);
    }

    #[test]
    fn records_round_trip_at_their_size() {
        let c = Customer {
            balance: -1000,
            data: Text::new(b"abc"),
            last: Text::new(b"BARBARBAR"),
            ..Default::default()
        };
        let bytes = c.encode();
        assert_eq!(bytes.len(), Customer::SIZE);
        let back = Customer::decode(&bytes).unwrap();
        assert_eq!((back.balance, back.data, back.last), (c.balance, c.data, c.last));
        let s = Stock {
            quantity: 42,
            dist: std::array::from_fn(|i| Text::new(&[b'a' + i as u8; 24])),
            ..Default::default()
        };
        let back = Stock::decode(&s.encode()).unwrap();
        assert_eq!((back.quantity, back.dist[9]), (42, s.dist[9]));
        assert!(matches!(Order::decode(&[0; 3]), Err(WorkloadError::Corrupt { .. })));
    }

    #[test]
    fn key_order_is_byte_order() {
        assert!(*key([1, 2, 300]) < *key([1, 3, 0]));
        assert!(*key([1, 255]) < *key([1, 256]));
        assert!(*key([1]) < *key([1, 0]));
        assert!(name_key(1, 1, b"BAR", b"ZZ") < name_key(1, 1, b"BARA", b"AA"));
        let (from, to) = name_range(1, 1, b"BAR");
        let k = name_key(1, 1, b"BAR", b"Q7");
        assert!(from <= k && k < to);
        assert!(!(from <= name_key(1, 1, b"BARA", b"A") && name_key(1, 1, b"BARA", b"A") < to));
        assert_eq!(key_part(&key([7, 9]), 1), 9);
    }
}
