package sqlcap

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"
)

// The SQLite driver is also registered as "sqlite", the name
// database/sql users of this package have used (tests open the demo file
// through it). Plugins' queries never go through database/sql.
func init() { sql.Register("sqlite", &driver.SQLite{}) }

var placeholder = regexp.MustCompile(`\?`)

// DemoSchema is the demo database's schema. Each table's first line
// comment is its description (the sql plugin's listTables shows it).
const DemoSchema = `
CREATE TABLE customers ( -- 客户 Customers: one row per customer
  customer_id INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,   -- 姓名 / name
  city        TEXT NOT NULL,   -- 城市 / city
  country     TEXT NOT NULL,   -- 国家 / country
  signup_date TEXT NOT NULL    -- 注册日期 YYYY-MM-DD
);
CREATE TABLE products ( -- 商品 Products on sale
  product_id INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,    -- 商品名 (Chinese)
  name_en    TEXT NOT NULL,    -- product name (English)
  category   TEXT NOT NULL,    -- 品类 / category
  unit_price REAL NOT NULL     -- list price, CNY
);
CREATE TABLE orders ( -- 订单 Orders: one row per order
  order_id    INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
  order_date  TEXT NOT NULL,   -- 下单日期 YYYY-MM-DD
  status      TEXT NOT NULL,   -- paid, shipped, refunded
  total       REAL NOT NULL    -- order amount, CNY (sum of its items)
);
CREATE TABLE order_items ( -- 订单明细 Order lines: products in each order
  order_id   INTEGER NOT NULL REFERENCES orders(order_id),
  product_id INTEGER NOT NULL REFERENCES products(product_id),
  quantity   INTEGER NOT NULL,
  unit_price REAL NOT NULL,    -- price paid per unit, CNY
  PRIMARY KEY (order_id, product_id)
);
CREATE INDEX orders_date ON orders(order_date);
CREATE INDEX orders_customer ON orders(customer_id);
`

var (
	demoCities = [][2]string{{"北京", "中国"}, {"上海", "中国"}, {"广州", "中国"}, {"深圳", "中国"}, {"杭州", "中国"},
		{"成都", "中国"}, {"武汉", "中国"}, {"台北", "中国台湾"}, {"香港", "中国香港"}, {"Singapore", "Singapore"},
		{"New York", "USA"}, {"London", "UK"}, {"Tokyo", "Japan"}}
	demoSurnames = []string{"王", "李", "张", "刘", "陈", "杨", "黄", "赵", "吴", "周", "徐", "孙", "马", "朱", "胡", "林"}
	demoGiven    = []string{"伟", "芳", "娜", "敏", "静", "磊", "洋", "艳", "勇", "军", "杰", "娟", "涛", "明", "超", "霞"}
	demoEnglish  = []string{"Alice Smith", "Bob Johnson", "Carol Lee", "David Brown", "Emma Wilson", "Frank Miller",
		"Grace Chen", "Henry Davis", "Ivy Wang", "Jack Taylor", "Kate Moore", "Leo Martin"}
	demoProducts = []struct {
		cn, en, cat string
		price       float64
	}{
		{"无线耳机", "Wireless earbuds", "电子产品 Electronics", 399}, {"机械键盘", "Mechanical keyboard", "电子产品 Electronics", 549},
		{"智能手表", "Smart watch", "电子产品 Electronics", 1299}, {"移动电源", "Power bank", "电子产品 Electronics", 159},
		{"蓝牙音箱", "Bluetooth speaker", "电子产品 Electronics", 299}, {"显示器", "Monitor 27in", "电子产品 Electronics", 1899},
		{"绿茶", "Green tea 250g", "食品饮料 Food & drink", 88}, {"咖啡豆", "Coffee beans 1kg", "食品饮料 Food & drink", 168},
		{"坚果礼盒", "Nut gift box", "食品饮料 Food & drink", 129}, {"矿泉水", "Mineral water x24", "食品饮料 Food & drink", 45},
		{"运动鞋", "Running shoes", "服饰 Apparel", 699}, {"羽绒服", "Down jacket", "服饰 Apparel", 1199},
		{"T恤", "T-shirt", "服饰 Apparel", 99}, {"牛仔裤", "Jeans", "服饰 Apparel", 299},
		{"保温杯", "Thermos flask", "家居 Home", 139}, {"台灯", "Desk lamp", "家居 Home", 189},
		{"床品四件套", "Bedding set", "家居 Home", 459}, {"空气净化器", "Air purifier", "家居 Home", 1599},
		{"小说", "Novel", "图书 Books", 49}, {"编程入门", "Programming primer", "图书 Books", 79},
		{"儿童绘本", "Picture book", "图书 Books", 39}, {"面霜", "Face cream", "美妆 Beauty", 299},
		{"口红", "Lipstick", "美妆 Beauty", 239}, {"洗发水", "Shampoo", "美妆 Beauty", 69},
	}
)

// EnsureDemo creates the demo database at path unless a file is there
// already: customers, products, orders and order items over 2025, a few
// thousand rows with Chinese and English names, always the same data.
func EnsureDemo(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	os.Remove(tmp)
	if err := writeDemo(tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("sqlcap: demo database: %w", err)
	}
	return os.Rename(tmp, path) // whole or nothing
}

func writeDemo(path string) error {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return err
	}
	defer db.Close()
	return fillDemo(context.Background(), db, false)
}

// LoadDemoPostgres writes the demo schema and data into an empty
// PostgreSQL database (same rows as the SQLite demo).
func LoadDemoPostgres(ctx context.Context, db *sql.DB) error {
	return fillDemo(ctx, db, true)
}

func fillDemo(ctx context.Context, db *sql.DB, pg bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	schema := DemoSchema
	if pg {
		schema = strings.ReplaceAll(schema, " REAL ", " DOUBLE PRECISION ")
	}
	for _, stmt := range strings.Split(schema, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if pg { // PostgreSQL drops "--" comments: make them real ones
		for _, c := range demoComments() {
			if _, err := tx.ExecContext(ctx, c); err != nil {
				return err
			}
		}
	}
	insert := func(q string, args ...any) error {
		if pg {
			n := 0
			q = placeholder.ReplaceAllStringFunc(q, func(string) string { n++; return fmt.Sprintf("$%d", n) })
		}
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	rng := rand.New(rand.NewPCG(2025, 12))
	const customers = 400
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for id := 1; id <= customers; id++ {
		city := demoCities[rng.IntN(len(demoCities))]
		var name string
		if city[1] == "中国" || city[1] == "中国台湾" || city[1] == "中国香港" {
			name = demoSurnames[rng.IntN(len(demoSurnames))] + demoGiven[rng.IntN(len(demoGiven))]
			if rng.IntN(2) == 0 {
				name += demoGiven[rng.IntN(len(demoGiven))]
			}
		} else {
			name = demoEnglish[rng.IntN(len(demoEnglish))]
		}
		signup := start.AddDate(0, -rng.IntN(24), -rng.IntN(28)).Format("2006-01-02")
		if err := insert(`INSERT INTO customers VALUES (?, ?, ?, ?, ?)`, id, name, city[0], city[1], signup); err != nil {
			return err
		}
	}
	for i, p := range demoProducts {
		if err := insert(`INSERT INTO products VALUES (?, ?, ?, ?, ?)`, i+1, p.cn, p.en, p.cat, p.price); err != nil {
			return err
		}
	}
	order := 0
	for day := 0; day < 365; day++ {
		date := start.AddDate(0, 0, day)
		// More orders towards the year's end and on "Double 11".
		n := 6 + int(4*math.Sin(float64(day)/58)) + day/60
		if date.Month() == 11 && date.Day() == 11 {
			n *= 5
		}
		for k := 0; k < n; k++ {
			order++
			items := 1 + rng.IntN(3)
			used := map[int]bool{}
			total := 0.0
			type line struct {
				product, qty int
				price        float64
			}
			var lines []line
			for it := 0; it < items; it++ {
				p := rng.IntN(len(demoProducts))
				if used[p] {
					continue
				}
				used[p] = true
				qty := 1 + rng.IntN(3)
				price := demoProducts[p].price
				if rng.IntN(5) == 0 {
					price = math.Round(price*0.85*100) / 100 // on sale
				}
				total += price * float64(qty)
				lines = append(lines, line{p + 1, qty, price})
			}
			status := []string{"paid", "shipped", "shipped", "shipped", "refunded"}[rng.IntN(5)]
			cust := 1 + rng.IntN(customers)
			// The order first, then its lines (they reference it).
			if err := insert(`INSERT INTO orders VALUES (?, ?, ?, ?, ?)`, order, cust, date.Format("2006-01-02"), status,
				math.Round(total*100)/100); err != nil {
				return err
			}
			for _, l := range lines {
				if err := insert(`INSERT INTO order_items VALUES (?, ?, ?, ?)`, order, l.product, l.qty, l.price); err != nil {
					return err
				}
			}
		}
	}
	return tx.Commit()
}

// demoComments turns the schema's "--" comments into COMMENT ON statements.
func demoComments() []string {
	var out []string
	table := ""
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	for _, line := range strings.Split(DemoSchema, "\n") {
		def, comment, ok := strings.Cut(line, "--")
		f := strings.Fields(def)
		switch {
		case len(f) >= 3 && f[0] == "CREATE" && f[1] == "TABLE":
			table = f[2]
			if ok {
				out = append(out, fmt.Sprintf("COMMENT ON TABLE %s IS %s", table, quote(strings.TrimSpace(comment))))
			}
		case ok && table != "" && len(f) >= 2 && f[0] != "PRIMARY":
			out = append(out, fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", table, f[0], quote(strings.TrimSpace(comment))))
		}
	}
	return out
}
