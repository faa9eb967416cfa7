//! The five transactions (clause 2), on any [`Engine`]. Each draws its inputs first, then runs
//! its body through [`Engine::transact`] (or [`Engine::transact_read`]), so a retried body sees
//! the same inputs. Each returns whether it committed (not rolled back) and how many attempts
//! it took.

use std::ops::Bound::{Excluded, Included};

use crate::engine::{Abort, Engine, TxRead, TxWrite};

use super::random::{last_name, C_ID, C_LAST_RUN, OL_I_ID};
use super::schema::{
    check_size, key, key_part, name_range, Customer, CustomerName, District, History, Item, Order, OrderLine,
    Record, Stock, Text, Warehouse,
};
use super::workload::{field, fixed_field, fixed_read, get, missing, t, Tables, Tpcc, TpccWorker, DISTRICTS};
use crate::workloads::WorkloadError;

type Done = Result<(bool, u32), WorkloadError>;

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_secs() as i64)
}

/// A customer chosen by id, or by last name (clause 2.5.2.2: the middle one of those with the
/// name, sorted by first name).
#[derive(Clone, Copy)]
enum Who {
    Id(u32),
    Name(Text<16>),
}

impl Tpcc {
    fn home<T>(&self, w: &mut TpccWorker<T>) -> u32 {
        w.rng.urand(1, self.config.warehouses)
    }

    fn customer_id<T>(&self, w: &mut TpccWorker<T>) -> u32 {
        w.rng.nurand(1023, 1, self.config.customers, C_ID)
    }

    fn who<T>(&self, w: &mut TpccWorker<T>) -> Who {
        if w.rng.percent(60) {
            Who::Name(last_name(w.rng.nurand(255, 0, self.config.max_name(), C_LAST_RUN)))
        } else {
            Who::Id(self.customer_id(w))
        }
    }

    /// New-Order (clause 2.4).
    pub(super) fn new_order<E: Engine>(&self, db: &E, w: &mut TpccWorker<E::Table>) -> Done {
        let cfg = &self.config;
        let w_id = self.home(w);
        let d_id = w.rng.urand(1, DISTRICTS);
        let c_id = self.customer_id(w);
        let count = w.rng.urand(5, 15);
        let rollback = w.rng.percent(1);
        // (supply warehouse, item, quantity) per line.
        let lines: Vec<(u32, u32, i64)> = (1..=count)
            .map(|n| {
                let supply = if cfg.remote && cfg.warehouses > 1 && w.rng.percent(1) {
                    w.rng.urand_except(1, cfg.warehouses, w_id)
                } else {
                    w_id
                };
                let item = if rollback && n == count {
                    cfg.items + 1
                } else {
                    w.rng.nurand(8191, 1, cfg.items, OL_I_ID)
                };
                (supply, item, i64::from(w.rng.urand(1, 10)))
            })
            .collect();
        let all_local = i64::from(lines.iter().all(|l| l.0 == w_id));
        let (tables, entry_d) = (&w.tables, now());
        // Items, W_TAX and C_DISCOUNT never change: committed reads suffice (TpccConfig).
        let committed = cfg.committed_reads;
        let (done, attempts) = db.transact(|tx| {
            let tb = |i| tables.tree(i);
            let mut prices = Vec::with_capacity(lines.len());
            let mut buf = Vec::with_capacity(OrderLine::SIZE);
            for &(_, item, _) in &lines {
                match fixed_read(&*tx, committed, tb(t::ITEM), &key([item]), |v| v.map(Item::decode))? {
                    Some(r) => prices.push(r?.price),
                    None if item > cfg.items => return Err(Abort::Rollback),
                    None => return Err(missing(Item::TABLE, &key([item])).into()),
                }
            }
            let w_tax = fixed_field(&*tx, committed, tb(t::WAREHOUSE), &key([w_id]), &Warehouse::TAX)?;
            let discount =
                fixed_field(&*tx, committed, tb(t::CUSTOMER), &key([w_id, d_id, c_id]), &Customer::DISCOUNT)?;
            let (o_id, d_tax) =
                self.patch::<_, District, _>(tx, tb(t::DISTRICT), &key([w_id, d_id]), |d| {
                    let o_id = District::NEXT_O_ID.get(d);
                    District::NEXT_O_ID.set(d, o_id + 1);
                    (o_id, District::TAX.get(d))
                })?;
            let order = Order { c_id, entry_d, carrier_id: 0, ol_cnt: lines.len() as i64, all_local };
            tx.insert(tb(t::ORDER), &key([w_id, d_id, o_id]), &order.encode())?;
            tx.insert(tb(t::ORDER_CUSTOMER), &key([w_id, d_id, c_id, o_id]), &[])?;
            for (n, (&(supply, item, qty), price)) in lines.iter().zip(prices).enumerate() {
                let dist_info = self.patch::<_, Stock, _>(tx, tb(t::STOCK), &key([supply, item]), |s| {
                    let q = Stock::QUANTITY.get(s);
                    Stock::QUANTITY.set(s, if q >= qty + 10 { q - qty } else { q + 91 - qty });
                    Stock::YTD.set(s, Stock::YTD.get(s) + qty);
                    Stock::ORDER_CNT.set(s, Stock::ORDER_CNT.get(s) + 1);
                    Stock::REMOTE_CNT.set(s, Stock::REMOTE_CNT.get(s) + i64::from(supply != w_id));
                    Stock::dist(d_id).get(s)
                })?;
                // qty * price * (1 + w_tax + d_tax) * (1 - discount), rates in 1/10000.
                let amount = qty * price * (10_000 + w_tax + d_tax) * (10_000 - discount) / 100_000_000;
                let line = OrderLine {
                    i_id: item,
                    supply_w_id: supply,
                    delivery_d: 0,
                    quantity: qty,
                    amount,
                    dist_info,
                };
                // One buffer for every line's bytes: no allocation per line.
                buf.clear();
                line.encode_into(&mut buf);
                tx.insert(tb(t::ORDER_LINE), &key([w_id, d_id, o_id, n as u32 + 1]), &buf)?;
            }
            tx.insert(tb(t::NEW_ORDER), &key([w_id, d_id, o_id]), &[])?;
            Ok(())
        })?;
        Ok((done.is_some(), attempts))
    }

    /// Payment (clause 2.5).
    pub(super) fn payment<E: Engine>(&self, db: &E, w: &mut TpccWorker<E::Table>) -> Done {
        let cfg = &self.config;
        let w_id = self.home(w);
        let d_id = w.rng.urand(1, DISTRICTS);
        let (c_w_id, c_d_id) = if cfg.remote && cfg.warehouses > 1 && w.rng.percent(15) {
            (w.rng.urand_except(1, cfg.warehouses, w_id), w.rng.urand(1, DISTRICTS))
        } else {
            (w_id, d_id)
        };
        let who = self.who(w);
        let amount = w.rng.range_i64(100, 500_000);
        let history_key = key([w.stream, w.sequence]);
        let (tables, date) = (&w.tables, now());
        let (_, attempts) = db.transact(|tx| {
            let tb = |i| tables.tree(i);
            let w_name = self.update(tx, tb(t::WAREHOUSE), &key([w_id]), |r: &mut Warehouse| {
                r.ytd += amount;
                r.address.name
            })?;
            let d_name = self.update(tx, tb(t::DISTRICT), &key([w_id, d_id]), |r: &mut District| {
                r.ytd += amount;
                r.address.name
            })?;
            let c_id = find_customer(tx, tables, c_w_id, c_d_id, who)?;
            self.update(tx, tb(t::CUSTOMER), &key([c_w_id, c_d_id, c_id]), |c: &mut Customer| {
                c.balance -= amount;
                c.ytd_payment += amount;
                c.payment_cnt += 1;
                if c.credit.as_bytes() == b"BC" {
                    let mut data = format!("| {c_id} {c_d_id} {c_w_id} {d_id} {w_id} {amount} ").into_bytes();
                    data.extend_from_slice(c.data.as_bytes());
                    c.data = Text::new(&data);
                }
            })?;
            let mut h_data = w_name.as_bytes().to_vec();
            h_data.extend_from_slice(b"    ");
            h_data.extend_from_slice(d_name.as_bytes());
            let h = History { c_id, c_d_id, c_w_id, d_id, w_id, date, amount, data: Text::new(&h_data) };
            tx.insert(tb(t::HISTORY), &history_key, &h.encode())?;
            Ok(())
        })?;
        w.sequence += 1;
        Ok((true, attempts))
    }

    /// Order-Status (clause 2.6).
    pub(super) fn order_status<E: Engine>(&self, db: &E, w: &mut TpccWorker<E::Table>) -> Done {
        let w_id = self.home(w);
        let d_id = w.rng.urand(1, DISTRICTS);
        let who = self.who(w);
        let tables = &w.tables;
        let (_, attempts) = db.transact_read(|tx| {
            let tb = |i| tables.tree(i);
            let c_id = find_customer(tx, tables, w_id, d_id, who)?;
            let _customer: Customer = get(tx, tb(t::CUSTOMER), &key([w_id, d_id, c_id]))?;
            let (from, to) = (key([w_id, d_id, c_id, 0]), key([w_id, d_id, c_id, u32::MAX]));
            let mut newest = None;
            tx.scan_rev(tb(t::ORDER_CUSTOMER), Included(&from), Included(&to), 1, |k, _| {
                newest = Some(key_part(k, 3));
                Ok(())
            })?;
            let Some(o_id) = newest else { return Ok(()) };
            let _order: Order = get(tx, tb(t::ORDER), &key([w_id, d_id, o_id]))?;
            let (from, to) = (key([w_id, d_id, o_id, 0]), key([w_id, d_id, o_id + 1, 0]));
            tx.scan(tb(t::ORDER_LINE), Included(&from), Excluded(&to), usize::MAX, |_, v| {
                OrderLine::decode(v)?;
                Ok(())
            })
        })?;
        Ok((true, attempts))
    }

    /// Delivery (clause 2.7), all ten districts in one transaction.
    pub(super) fn delivery<E: Engine>(&self, db: &E, w: &mut TpccWorker<E::Table>) -> Done {
        let w_id = self.home(w);
        let carrier = w.rng.urand(1, 10);
        let (tables, date) = (&w.tables, now());
        let (_, attempts) = db.transact(|tx| {
            let tb = |i| tables.tree(i);
            for d_id in 1..=DISTRICTS {
                let (from, to) = (key([w_id, d_id, 0]), key([w_id, d_id + 1, 0]));
                let mut oldest = None;
                tx.scan(tb(t::NEW_ORDER), Included(&from), Excluded(&to), 1, |k, _| {
                    oldest = Some(k.to_vec());
                    Ok(())
                })?;
                let Some(no_key) = oldest else { continue };
                // Claim it; with locking off another Delivery may have been first.
                if !tx.delete(tb(t::NEW_ORDER), &no_key)? {
                    continue;
                }
                let o_id = key_part(&no_key, 2);
                let (c_id, count) = self.update(tx, tb(t::ORDER), &no_key, |o: &mut Order| {
                    o.carrier_id = carrier;
                    (o.c_id, o.ol_cnt)
                })?;
                let mut total = 0;
                for n in 1..=count as u32 {
                    let line = key([w_id, d_id, o_id, n]);
                    total += self.patch::<_, OrderLine, _>(tx, tb(t::ORDER_LINE), &line, |l| {
                        OrderLine::DELIVERY_D.set(l, date);
                        OrderLine::AMOUNT.get(l)
                    })?;
                }
                self.patch::<_, Customer, _>(tx, tb(t::CUSTOMER), &key([w_id, d_id, c_id]), |c| {
                    Customer::BALANCE.set(c, Customer::BALANCE.get(c) + total);
                    Customer::DELIVERY_CNT.set(c, Customer::DELIVERY_CNT.get(c) + 1);
                })?;
            }
            Ok(())
        })?;
        Ok((true, attempts))
    }

    /// Stock-Level (clause 2.8): distinct items of the district's last 20 orders whose stock is
    /// below a threshold.
    pub(super) fn stock_level<E: Engine>(&self, db: &E, w: &mut TpccWorker<E::Table>) -> Done {
        let w_id = self.home(w);
        let d_id = w.rng.urand(1, DISTRICTS);
        let threshold = i64::from(w.rng.urand(10, 20));
        let tables = &w.tables;
        // TPC-C asks level 1 of Stock-Level (TpccConfig::stock_level_read_committed).
        let (_, attempts) = if self.config.stock_level_read_committed {
            db.transact_read_committed(|tx| low_stock(tx, tables, w_id, d_id, threshold))?
        } else {
            db.transact_read(|tx| low_stock(tx, tables, w_id, d_id, threshold))?
        };
        Ok((true, attempts))
    }
}

/// Stock-Level's reads: the district's next order id, the items of its last twenty orders'
/// lines, and how many of those items' stock in the warehouse is below `threshold`.
fn low_stock<X: TxRead>(
    tx: &X,
    tables: &Tables<X::Table>,
    w_id: u32,
    d_id: u32,
    threshold: i64,
) -> Result<u32, Abort> {
    let tb = |i| tables.tree(i);
    let next = field(tx, tb(t::DISTRICT), &key([w_id, d_id]), &District::NEXT_O_ID)?;
    let (from, to) = (key([w_id, d_id, next.saturating_sub(20), 0]), key([w_id, d_id, next, 0]));
    let mut items = Vec::with_capacity(300);
    tx.scan(tb(t::ORDER_LINE), Included(&from), Excluded(&to), usize::MAX, |_, v| {
        check_size::<OrderLine>(v)?;
        items.push(OrderLine::I_ID.get(v));
        Ok(())
    })?;
    items.sort_unstable();
    items.dedup();
    let mut low = 0u32;
    for i_id in items {
        let quantity = field(tx, tb(t::STOCK), &key([w_id, i_id]), &Stock::QUANTITY)?;
        low += u32::from(quantity < threshold);
    }
    Ok(low)
}

/// The customer's id: given, or the middle one of those with the last name.
fn find_customer<X: TxRead>(
    tx: &X,
    tables: &Tables<X::Table>,
    w_id: u32,
    d_id: u32,
    who: Who,
) -> Result<u32, Abort> {
    let name = match who {
        Who::Id(id) => return Ok(id),
        Who::Name(name) => name,
    };
    let (from, to) = name_range(w_id, d_id, name.as_bytes());
    let mut ids = Vec::with_capacity(8);
    tx.scan(tables.tree(t::CUSTOMER_NAME), Included(&from), Excluded(&to), usize::MAX, |_, v| {
        ids.push(CustomerName::decode(v)?.c_id);
        Ok(())
    })?;
    if ids.is_empty() {
        return Err(missing(CustomerName::TABLE, &from).into());
    }
    Ok(ids[ids.len().div_ceil(2) - 1])
}
